# src/nri/: the NRI plugin (`resview nri`), linked into the CLI only (never
# into the static hot-path binaries: they need no protobuf-c). Its messages
# are generated here at build time, never kept in git: NRI's api.proto as
# Debian ships it (api-proto.sh: golang-github-containerd-nri-dev 0.8.0-1,
# SHA256 checked, cached in build/nri-api/ for every build tree, make asan's
# too) and ttrpc's envelope (ttrpc.proto),
# both through protoc-c (protobuf-c-compiler). NRI_API=FILE: use that
# api.proto instead of downloading it (a machine with no archive in reach).
NRI_GEN      := $(BUILD)/nri
NRI_CACHE    ?= build/nri-api
NRI_API      ?= $(NRI_CACHE)/api.proto
NRI_GEN_H    := $(NRI_GEN)/api.pb-c.h $(NRI_GEN)/ttrpc.pb-c.h
# libprotobuf-c's one object, from Debian's static archive (position
# independent), into the library: `resview` then needs no libprotobuf-c.so
# where it runs (a node, the node image, a guest without the package)
# (a tree built elsewhere, as the v2 guests' `make image`, keeps its object)
NRI_PBC_LIB  := $(shell pkg-config --variable=libdir libprotobuf-c 2>/dev/null || echo /usr/lib)/libprotobuf-c.a
NRI_PBC_OBJ  := $(NRI_GEN)/obj/protobuf-c.o
NRI_GEN_OBJS := $(NRI_GEN)/obj/api.pb-c.o $(NRI_GEN)/obj/ttrpc.pb-c.o $(NRI_PBC_OBJ)
ALL_CFLAGS   += -I$(NRI_GEN)
FUZZ_CFLAGS  += -I$(NRI_GEN)

$(NRI_CACHE)/api.proto: src/nri/api-proto.sh
	@src/nri/api-proto.sh $@
$(NRI_GEN)/api.pb-c.c $(NRI_GEN)/api.pb-c.h &: $(NRI_API)
	@mkdir -p $(NRI_GEN)
	protoc-c --c_out=$(NRI_GEN) --proto_path=$(dir $(NRI_API)) $(NRI_API)
$(NRI_GEN)/ttrpc.pb-c.c $(NRI_GEN)/ttrpc.pb-c.h &: src/nri/ttrpc.proto
	@mkdir -p $(NRI_GEN)
	protoc-c --c_out=$(NRI_GEN) --proto_path=src/nri src/nri/ttrpc.proto
# generated code: the library's warnings are not ours to fix (no -Werror)
$(NRI_GEN)/obj/%.pb-c.o: $(NRI_GEN)/%.pb-c.c $(NRI_GEN_H)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -Ulinux $(OPT) $(HARDEN) -I$(NRI_GEN) -ffunction-sections -fdata-sections -c -o $@ $<
$(NRI_PBC_OBJ): $(wildcard $(NRI_PBC_LIB))
	@[ -f $(NRI_PBC_LIB) ] || { echo "make: $(NRI_PBC_LIB) missing: libprotobuf-c-dev (make deps)" >&2; exit 1; }
	@mkdir -p $(@D)
	cd $(@D) && ar x $(abspath $(NRI_PBC_LIB)) protobuf-c.o && touch protobuf-c.o
$(BUILD)/libresview.a: $(NRI_GEN_OBJS)
$(filter $(BUILD)/obj/nri/%,$(LIB_OBJS)): $(NRI_GEN_H)
$(filter $(BUILD)/tests/test_nri%,$(UNIT_BINS)): $(NRI_GEN_H)

# the fuzz build (tests/hardening.mk): the same, under its sanitizers
NRI_FUZZ_OBJS := $(NRI_GEN)/fuzz/api.pb-c.o $(NRI_GEN)/fuzz/ttrpc.pb-c.o
$(NRI_GEN)/fuzz/%.pb-c.o: $(NRI_GEN)/%.pb-c.c $(NRI_GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -Ulinux -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -I$(NRI_GEN) -c -o $@ $<
$(BUILD)/fuzz/libresview.a: $(NRI_FUZZ_OBJS) $(NRI_PBC_OBJ)
$(filter $(BUILD)/fuzz/obj/nri/%,$(FUZZ_OBJS)) $(BUILD)/fuzz/fuzz_nri: $(NRI_GEN_H)
