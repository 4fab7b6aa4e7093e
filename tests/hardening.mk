# Hardening (issue 6): libFuzzer harnesses and sanitizer builds.
#   make fuzz            build the fuzzers, run each for FUZZ_SECONDS (default 60)
#   make fuzz-build      build them only (build/fuzz/fuzz_*)
#   make asan            library, unit tests and binaries under ASan+UBSan (build/asan)
# The fuzz and sanitizer builds drop -Werror (another compiler's warnings are
# not a reason to stop testing) and _FORTIFY_SOURCE (it conflicts with ASan).

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=gnu11 -O1 -g $(filter-out -Werror -Wformat-truncation=0,$(WARN)) -Iinclude -Isrc -DRV_VERSION=\"$(VERSION)\" \
                $(shell pkg-config --cflags $(PKGS_CLI) 2>/dev/null)
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_OBJS    := $(LIB_SRCS:src/%.c=$(FUZZ_BUILD)/obj/%.o)

.PHONY: fuzz fuzz-build asan
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

$(FUZZ_BUILD)/obj:
	mkdir -p $@
$(FUZZ_BUILD)/obj/%.o: src/%.c $(HDRS) | $(FUZZ_BUILD)/obj
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_BUILD)/libresview.a: $(FUZZ_OBJS)
	rm -f $@ && ar rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libresview.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -Itests/fuzz -o $@ $< \
	    $(FUZZ_BUILD)/libresview.a $(shell pkg-config --libs $(PKGS_CLI) 2>/dev/null)

# ASan + UBSan build of everything with the ordinary compiler, in its own tree.
ASAN_BUILD := $(BUILD)/asan
asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) HARDEN=-fPIE OPT="-O1 -g" \
	    WARN="$(filter-out -Werror,$(WARN))" \
	    CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    LDFLAGS="-fsanitize=address,undefined" \
	    $(ASAN_BUILD)/resview-runtime $(ASAN_BUILD)/resview-hook $(ASAN_BUILD)/resview \
	    $(UNIT_SRCS:tests/unit/%.c=$(ASAN_BUILD)/tests/%)

# The shim's steps without the final exec (valgrind leak check of the whole path).
$(BUILD)/hardening:
	mkdir -p $@
$(BUILD)/hardening/shim-inproc: tests/fuzz/shim_inproc.c $(BUILD)/libresview.a | $(BUILD)/hardening
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libresview.a $(LIBS_HOT)
