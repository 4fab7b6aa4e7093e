# resview - see README.md. `make` builds, `make check` tests everything,
# `make demo` shows the difference, `make bench` measures.

VERSION  := 0.1.0
PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
PKGS_HOT := jansson libseccomp libcap
PKGS_CLI := $(PKGS_HOT) mount

WARN     := -Wall -Wextra -Wshadow -Wformat=2 -Wformat-truncation=0 -Wstrict-prototypes \
            -Wmissing-prototypes -Wvla -Werror
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
OPT      ?= -O2 -g
CFLAGS   ?=
LDFLAGS  ?=
ALL_CFLAGS  = -std=gnu11 $(OPT) $(WARN) $(HARDEN) -Iinclude -DRV_VERSION=\"$(VERSION)\" \
              $(shell pkg-config --cflags $(PKGS_CLI) 2>/dev/null) $(CFLAGS)
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -Wl,--gc-sections $(LDFLAGS)
LIBS_HOT    = $(shell pkg-config --libs $(PKGS_HOT) 2>/dev/null)
LIBS_CLI    = $(shell pkg-config --libs $(PKGS_CLI) 2>/dev/null)

LIB_SRCS := $(wildcard src/*.c)
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
BINS     := $(BUILD)/resview-runtime $(BUILD)/resview-hook $(BUILD)/resview
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all static deps check unit e2e demo bench install uninstall clean fuzz image
all: $(BINS)

$(BUILD)/obj/%.o: src/%.c $(wildcard include/resview/*.h) | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -ffunction-sections -fdata-sections -c -o $@ $<
$(BUILD)/obj/bin-%.o: src/bin/%.c $(wildcard include/resview/*.h) | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -ffunction-sections -fdata-sections -c -o $@ $<
$(BUILD)/libresview.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/resview-runtime: $(BUILD)/obj/bin-resview-runtime.o $(BUILD)/libresview.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_HOT)
$(BUILD)/resview-hook: $(BUILD)/obj/bin-resview-hook.o $(BUILD)/libresview.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_HOT)
$(BUILD)/resview: $(BUILD)/obj/bin-resview.o $(BUILD)/libresview.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS_CLI)
$(BUILD)/obj $(BUILD)/tests $(BUILD)/static:
	mkdir -p $@

# Fully static hot-path binaries (libmount has no .a in Debian: CLI only).
static: $(BUILD)/static/resview-runtime $(BUILD)/static/resview-hook
$(BUILD)/static/%: $(BUILD)/obj/bin-%.o $(BUILD)/libresview.a | $(BUILD)/static
	$(CC) -static -Wl,-z,relro,-z,now -Wl,--gc-sections -o $@ $^ \
	    $(shell pkg-config --static --libs $(PKGS_HOT))

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(BUILD)/libresview.a | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Itests/unit $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libresview.a $(LIBS_CLI)

# Packages the build and the tests need (Debian); installs only what is missing.
deps:
	@tests/lib/deps.sh

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

e2e: all static
	@tests/run-e2e.sh

check: deps
	@$(MAKE) -s --no-print-directory all static $(UNIT_BINS)
	@tests/run-all.sh $(UNIT_BINS)

# The demo and the benchmark need only the base packages, not the engines.
demo:
	@tests/lib/deps.sh base
	@$(MAKE) -s --no-print-directory all
	@tests/demo.sh

bench:
	@tests/lib/deps.sh base
	@$(MAKE) -s --no-print-directory all static
	@tests/bench.sh

# The Kubernetes node image (hooks/kubernetes/): FROM scratch, LXCFS and the
# agent's libraries from Debian's .debs, the static binaries; an OCI archive
# that ctr, docker load and skopeo accept, as $(BUILD)/resview-node.tar.
image: $(BUILD)/resview-node.tar
$(BUILD)/resview-node.tar: $(BINS) $(BUILD)/static/resview-runtime $(BUILD)/static/resview-hook profiles/seccomp.json $(wildcard hooks/kubernetes/image/*)
	@hooks/kubernetes/image/build.sh $(BUILD) $(VERSION)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,resview-runtime resview-hook resview)

clean:
	rm -rf $(BUILD)

# Targets contributed by test areas (fuzzing, sanitizers, ...).
-include $(wildcard tests/*.mk)
