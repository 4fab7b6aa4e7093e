# resview - see README.md. `make` builds, `make check` tests everything,
# `make demo` shows the difference, `make bench` measures.

PREFIX   ?= /usr/local
BUILD    ?= build
# The version: the top entry of hooks/debian/changelog, +git.SHORTSHA for a
# tree past it (hooks/debian/version.sh); `make VERSION=X` builds another. A
# tree built elsewhere and used where git cannot read it (the v2 guests) keeps
# the version it was built with.
VERSION  := $(shell if git rev-parse -q --verify HEAD >/dev/null 2>&1 || [ ! -s $(BUILD)/version ]; \
                    then hooks/debian/version.sh; else cat $(BUILD)/version; fi)
CC       ?= cc
PKGS_HOT := jansson libseccomp
PKGS_CLI := $(PKGS_HOT) mount

WARN     := -Wall -Wextra -Wshadow -Wformat=2 -Wformat-truncation=0 -Wstrict-prototypes \
            -Wmissing-prototypes -Wvla -Werror
HARDEN   := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
OPT      ?= -O2 -g
CFLAGS   ?=
LDFLAGS  ?=
ALL_CFLAGS  = -std=gnu11 $(OPT) $(WARN) $(HARDEN) -Iinclude -Isrc -DRV_VERSION=\"$(VERSION)\" \
              $(shell pkg-config --cflags $(PKGS_CLI) 2>/dev/null) $(CFLAGS)
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -Wl,--gc-sections $(LDFLAGS)
LIBS_HOT    = $(shell pkg-config --libs $(PKGS_HOT) 2>/dev/null)
LIBS_CLI    = $(shell pkg-config --libs $(PKGS_CLI) 2>/dev/null)

# src/<subsystem>/*.c (src/README.md); src/bin/ holds the mains
LIB_SRCS := $(filter-out src/bin/%,$(wildcard src/*/*.c))
HDRS     := $(wildcard include/resview/*.h src/*/*.h)
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
BINS     := $(BUILD)/resview-runtime $(BUILD)/resview-hook $(BUILD)/resview
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all static deps check unit e2e e2e-v2 e2e-bookworm e2e-next demo bench install uninstall clean fuzz image \
        deb version FORCE
all: $(BINS)

# The objects that print the version are rebuilt when it changes.
$(BUILD)/version: FORCE
	@mkdir -p $(@D) && [ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" >$@
version:
	@echo $(VERSION)
VERSION_SRCS := $(shell grep -l RV_VERSION src/*/*.c)
$(foreach o,$(patsubst obj/bin/%,obj/bin-%,$(VERSION_SRCS:src/%.c=obj/%.o)),$(BUILD)/$(o) $(BUILD)/musl/$(o)): $(BUILD)/version

$(BUILD)/obj/%.o: src/%.c $(HDRS) | $(BUILD)/obj
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -ffunction-sections -fdata-sections -c -o $@ $<
$(BUILD)/obj/bin-%.o: src/bin/%.c $(HDRS) | $(BUILD)/obj
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

# Fully static hot-path binaries against musl (exec costs a static glibc
# program ~4x what it costs a musl one, see tests/README.md "Performance"). jansson and
# libseccomp come from Debian's source packages: `apt-get source` with a
# private apt configuration under $(MUSL)/apt (deb-src entries for the Debian
# archive this host's apt is configured with; the host's own sources, lists
# and caches are not touched), built once into $(MUSL)/prefix. libmount has no
# place here: the CLI only (its sources are left out of the musl library), nor
# has protobuf-c (src/nri/, the NRI plugin, is the CLI's only).
MUSL        := $(BUILD)/musl
MUSL_PREFIX := $(MUSL)/prefix
MUSL_CFLAGS  = -std=gnu11 $(OPT) $(WARN) -fstack-protector-strong -fPIE -isystem $(MUSL)/include \
               -I$(MUSL_PREFIX)/include -Iinclude -Isrc -DRV_VERSION=\"$(VERSION)\" $(CFLAGS)
MUSL_LIBS   := $(MUSL_PREFIX)/lib/libseccomp.a $(MUSL_PREFIX)/lib/libjansson.a
MUSL_SRCS   := $(filter-out src/nri/% $(shell grep -l '<libmount.h>' $(LIB_SRCS)),$(LIB_SRCS))
MUSL_OBJS   := $(MUSL_SRCS:src/%.c=$(MUSL)/obj/%.o)
MUSL_APT     = -o Dir::Etc::SourceList=$(abspath $(MUSL))/apt/sources.list \
               -o Dir::Etc::SourceParts=$(abspath $(MUSL))/apt/parts.d \
               -o Dir::State::Lists=$(abspath $(MUSL))/apt/lists \
               -o Dir::Cache=$(abspath $(MUSL))/apt/cache -o APT::Sandbox::User=root
static: $(BUILD)/static/resview-runtime $(BUILD)/static/resview-hook
# src/bin/alloc.c: their malloc, in front of musl's (see there why)
$(BUILD)/static/%: $(MUSL)/obj/bin-%.o $(MUSL)/obj/bin-alloc.o $(MUSL)/libresview.a $(MUSL_LIBS) | $(BUILD)/static
	musl-gcc -static -Wl,-z,relro,-z,now -Wl,--gc-sections -o $@ $^
# kept: make 4.4 (Debian 13 and later) rebuilds a target whose intermediate
# make 4.3 deleted, and the v2 guests run `make image` on the tree built here
# without musl-tools (48-kubernetes)
.SECONDARY: $(MUSL)/obj/bin-resview-runtime.o $(MUSL)/obj/bin-resview-hook.o $(MUSL)/obj/bin-alloc.o
$(MUSL)/libresview.a: $(MUSL_OBJS)
	rm -f $@ && ar rcs $@ $^
$(MUSL)/obj/%.o: src/%.c $(HDRS) $(MUSL_LIBS) $(MUSL)/include/.done | $(MUSL)/obj
	@mkdir -p $(@D)
	musl-gcc $(MUSL_CFLAGS) -ffunction-sections -fdata-sections -c -o $@ $<
$(MUSL)/obj/bin-%.o: src/bin/%.c $(HDRS) $(MUSL_LIBS) $(MUSL)/include/.done | $(MUSL)/obj
	musl-gcc $(MUSL_CFLAGS) -ffunction-sections -fdata-sections -c -o $@ $<
$(MUSL)/obj:
	mkdir -p $@
# The kernel's uapi headers (linux/, asm/), which musl does not ship.
$(MUSL)/include/.done:
	mkdir -p $(@D)
	ln -sfn /usr/include/linux $(@D)/linux && ln -sfn /usr/include/asm-generic $(@D)/asm-generic
	ln -sfn /usr/include/$$(gcc -print-multiarch)/asm $(@D)/asm && touch $@
# Sources: the deb-src twin of every Debian archive apt is configured with.
$(MUSL)/src/.done:
	rm -rf $(MUSL)/apt $(@D) && mkdir -p $(MUSL)/apt/lists/partial $(MUSL)/apt/parts.d \
	    $(MUSL)/apt/cache/archives/partial $(@D)
	key=/usr/share/keyrings/debian-archive-keyring.gpg; [ -r $$key ] || key=; \
	apt-get indextargets --format '$$(REPO_URI) $$(RELEASE) $$(COMPONENT)' 'Target-Of: deb' 'Origin: Debian' | \
	    sort -u | sed "s|^|deb-src $${key:+[signed-by=$$key] }|" >$(MUSL)/apt/sources.list
	@[ -s $(MUSL)/apt/sources.list ] || { echo "make static: apt knows no Debian archive here (apt-get update first)" >&2; exit 1; }
	apt-get $(MUSL_APT) -qq update
	cd $(@D) && apt-get $(MUSL_APT) -qq source jansson libseccomp >../apt/source.log 2>&1 || \
	    { cat ../apt/source.log >&2; exit 1; }
	touch $@
# jansson: its sources compiled directly (what its configure would find on any
# Linux, in the two config headers it expects), no autotools needed.
$(MUSL_PREFIX)/lib/libjansson.a: $(MUSL)/src/.done
	rm -rf $(MUSL)/jansson && mkdir -p $(MUSL)/jansson $(MUSL_PREFIX)/lib $(MUSL_PREFIX)/include
	set -e; j=$$(echo $(MUSL)/src/jansson-*/src); \
	sed 's/@json_inline@/inline/; s/@json_have_[a-z_]*@/1/' $$j/jansson_config.h.in >$(MUSL)/jansson/jansson_config.h; \
	for d in STDINT_H ENDIAN_H FCNTL_H LOCALE_H SCHED_H UNISTD_H SYS_PARAM_H SYS_STAT_H SYS_TIME_H \
	         SYS_TYPES_H CLOSE GETPID GETTIMEOFDAY LOCALECONV OPEN READ SCHED_YIELD STRTOLL \
	         SYNC_BUILTINS ATOMIC_BUILTINS; do echo "#define HAVE_$$d 1"; done \
	    >$(MUSL)/jansson/jansson_private_config.h; \
	printf '#define USE_URANDOM 1\n#define INITIAL_HASHTABLE_ORDER 3\n' >>$(MUSL)/jansson/jansson_private_config.h; \
	for c in $$j/*.c; do musl-gcc -O2 -fPIE -ffunction-sections -fdata-sections -DHAVE_CONFIG_H \
	    -I$(MUSL)/jansson -c -o $(MUSL)/jansson/$$(basename $$c .c).o $$c; done; \
	cp $$j/jansson.h $(MUSL)/jansson/jansson_config.h $(MUSL_PREFIX)/include/
	ar rcs $@ $(MUSL)/jansson/*.o
# libseccomp: its own configure and make (the syscall table is regenerated with gperf).
$(MUSL_PREFIX)/lib/libseccomp.a: $(MUSL)/src/.done $(MUSL)/include/.done
	rm -rf $(MUSL)/libseccomp && cp -a $$(echo $(MUSL)/src/libseccomp-*/) $(MUSL)/libseccomp
	cd $(MUSL)/libseccomp && ./configure -q CC="musl-gcc -isystem $(abspath $(MUSL))/include" \
	    CFLAGS="-O2 -fPIE" --enable-static --disable-shared --disable-python \
	    --prefix=$(abspath $(MUSL_PREFIX)) >../libseccomp.log 2>&1 && \
	    $(MAKE) -C src install-libLTLIBRARIES >>../libseccomp.log 2>&1 && \
	    $(MAKE) -C include install >>../libseccomp.log 2>&1 || { tail -n 30 ../libseccomp.log >&2; exit 1; }

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(BUILD)/libresview.a | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Itests/unit $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libresview.a $(LIBS_CLI)

# Packages the build and the tests need (Debian); installs only what is missing.
deps:
	@tests/lib/deps.sh

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

# End-to-end tests drive the binaries that get installed: the static musl ones.
E2E_BINS := RUNTIME_BIN=$(abspath $(BUILD))/static/resview-runtime HOOK_BIN=$(abspath $(BUILD))/static/resview-hook
e2e: all static
	@$(E2E_BINS) tests/run-e2e.sh

# The e2e scripts of tests/v2/suites.txt on a cgroup v2 guest (qemu), all of
# them; `make check` runs those it marks (tests/check.d/v2.sh).
e2e-v2: all static
	@RESVIEW_V2_ALL=1 $(E2E_BINS) tests/v2/run.sh

# The same scripts on the other guests (tests/README.md "The nodes"): Debian 12
# on cgroup v2 (its own default), and Debian unstable's newest engines (sid);
# not in `make check` (CI's time).
e2e-bookworm: all static
	@RESVIEW_V2_SUITE=bookworm RESVIEW_V2_ALL=1 $(E2E_BINS) tests/v2/run.sh
e2e-next: all static
	@RESVIEW_V2_SUITE=sid RESVIEW_V2_ALL=1 $(E2E_BINS) tests/v2/run.sh

check: deps
	@$(MAKE) -s --no-print-directory all static $(UNIT_BINS)
	@$(E2E_BINS) tests/run-all.sh $(UNIT_BINS)

# The demo and the benchmark need only the base packages, not the engines.
demo:
	@tests/lib/deps.sh base
	@$(MAKE) -s --no-print-directory all
	@tests/demo.sh

bench:
	@tests/lib/deps.sh base
	@$(MAKE) -s --no-print-directory all static $(BUILD)/tests/test_nri $(BUILD)/tests/test_nri_conn
	@tests/bench.sh

# The Kubernetes node image (hooks/kubernetes/): FROM scratch, LXCFS and the
# agent's libraries from Debian's .debs, the static binaries; an OCI archive
# that ctr, docker load and skopeo accept, as $(BUILD)/resview-node.tar.
image: $(BUILD)/resview-node.tar
$(BUILD)/resview-node.tar: $(BINS) $(BUILD)/static/resview-runtime $(BUILD)/static/resview-hook profiles/seccomp.json $(wildcard hooks/kubernetes/image/*)
	@hooks/kubernetes/image/build.sh $(BUILD) $(VERSION)

# What `make install` and the package install (DESTDIR, PREFIX as usual):
# the binaries; the default seccomp profile where resview-runtime looks for it
# ($(PREFIX)/bin/../share/resview/seccomp.json); the FUSE runtime name, a
# symlink (profiles/README.md "Who may ask"; FUSE stays off until fuse.allowed
# is set); resview-watch.service (UNITDIR, its ExecStart under PREFIX); the man
# pages (src/man.mk; resview-runtime-fuse.8 a link); the example
# /etc/resview/config.json (hooks/debian/config.json: the defaults,
# resview.json(5)), never over an existing one. `make uninstall` takes out
# exactly these, the configuration only while it is the example's bytes.
BINDIR   = $(PREFIX)/bin
DATADIR  = $(PREFIX)/share/resview
MANDIR   = $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
EXAMPLE  := hooks/debian/config.json
ROTATE   := hooks/logrotate/resview
install: all static man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)/etc/resview \
	    $(DESTDIR)/etc/logrotate.d
	install -m 0755 $(BUILD)/static/resview-runtime $(BUILD)/static/resview-hook $(BUILD)/resview \
	    $(DESTDIR)$(BINDIR)/
	install -m 0644 profiles/seccomp.json $(DESTDIR)$(DATADIR)/seccomp.json
	ln -sfn resview-runtime $(DESTDIR)$(BINDIR)/resview-runtime-fuse
	sed 's|/usr/bin/resview|$(BINDIR)/resview|' hooks/systemd/resview-watch.service \
	    >$(DESTDIR)$(UNITDIR)/resview-watch.service && chmod 0644 $(DESTDIR)$(UNITDIR)/resview-watch.service
	install -d $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5
	install -m 0644 $(filter %.8,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
	ln -sfn resview-runtime.8 $(DESTDIR)$(MANDIR)/man8/resview-runtime-fuse.8
	[ -e $(DESTDIR)/etc/resview/config.json ] || install -m 0644 $(EXAMPLE) $(DESTDIR)/etc/resview/config.json
	[ -e $(DESTDIR)/etc/logrotate.d/resview ] || install -m 0644 $(ROTATE) $(DESTDIR)/etc/logrotate.d/resview

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,resview-runtime resview-hook resview resview-runtime-fuse) \
	    $(DESTDIR)$(DATADIR)/seccomp.json $(DESTDIR)$(UNITDIR)/resview-watch.service \
	    $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(filter %.8,$(MAN_PAGES))) resview-runtime-fuse.8) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(filter %.5,$(MAN_PAGES))))
	for f in $(EXAMPLE):/etc/resview/config.json $(ROTATE):/etc/logrotate.d/resview; do \
	    if cmp -s $${f%%:*} $(DESTDIR)$${f#*:}; then rm -f $(DESTDIR)$${f#*:}; \
	    elif [ -e $(DESTDIR)$${f#*:} ]; then echo "make uninstall: kept $(DESTDIR)$${f#*:} (changed since install)"; fi; \
	done
	rmdir $(DESTDIR)$(DATADIR) $(DESTDIR)/etc/resview 2>/dev/null || true

# The Debian package, $(BUILD)/resview_VERSION_ARCH.deb (hooks/debian/build.sh;
# the only one there): what `make install` installs under /usr, the unit where
# this Debian keeps packages' units (/lib before 13), and the package's own
# files from hooks/debian/.
DEB_ARCH    = $(shell dpkg --print-architecture)
DEB_UNITDIR = $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null | grep . || \
                  case "$$(cat /etc/debian_version)" in ([0-9].* | 1[0-2].*) echo /lib/systemd/system ;; \
                  (*) echo /usr/lib/systemd/system ;; esac)
deb: all static man
	rm -rf $(BUILD)/deb $(BUILD)/resview_*.deb
	@$(MAKE) -s --no-print-directory install DESTDIR=$(abspath $(BUILD))/deb/root PREFIX=/usr \
	    UNITDIR=$(DEB_UNITDIR) VERSION=$(VERSION) >/dev/null
	@hooks/debian/build.sh $(BUILD)/deb/root $(VERSION) $(BUILD)/resview_$(VERSION)_$(DEB_ARCH).deb

clean:
	rm -rf $(BUILD)

# Targets contributed by test areas (fuzzing, sanitizers, ...).
-include $(wildcard tests/*.mk)
# The NRI plugin's generated messages (src/nri/, the CLI only).
include src/nri/nri.mk
# The man pages (make man).
include src/man.mk
