# inferno — build the library, the CLI (build/inferno) and the tests.
#
#   make                  library + CLI
#   make check            the whole suite, every build (sh scripts/check.sh; what CI runs)
#   make test             build and run the C and CLI tests of one build (BUILD, default build/)
#   make SAN=1            AddressSanitizer + UndefinedBehaviorSanitizer build (in build-san/)
#   make TSAN=1           ThreadSanitizer build (in build-tsan/)
#   make kernel-tests     the backend alone and its tests (no cJSON etc.)
#   make build/attn_bench decode attention, contiguous vs paged KV (bench/attn_bench.c)
#   make build/decode_ceiling  a model's decode against reads of its bytes (bench/decode_ceiling.c)
#   make build/fresh_kv   decode over new cache positions against the same again (bench/fresh_kv.c)
#   sh scripts/kernel-ab.sh REV MODEL  the AVX-512 decode kernels against REV's, in one process (bench/kernel_ab.c)
#   make build/gguf_to_hf a synthetic GGUF as a Hugging Face directory (scripts/synth-hf.sh)
#   make build/gguf_split a GGUF split as llama.cpp's gguf-split does (bench/gguf_split.c)
#   make CC=aarch64-linux-gnu-gcc BUILD=build-arm64 kernel-tests
#                         an arm64 cross build (scripts/check-arm64.sh)
#   make CC=clang BUILD=build-clang tests
#                         a clang build (scripts/check.sh builds one)
#   make CC=clang FUZZ=1 fuzz-targets
#                         the libFuzzer targets of tests/fuzz/ (in build-fuzz/; scripts/fuzz.sh)
#
# Flags: CFLAGS, CPPFLAGS, LDFLAGS and LDLIBS are the user's, from the
# command line (make CFLAGS=-O3) or the environment; they never replace what
# the build needs (INF_CFLAGS, INF_LDLIBS), which is added after them. OPT
# (-O2) comes first, so an -O in CFLAGS wins; WERROR= turns -Werror off.
# Objects are not rebuilt when only flags change: use another BUILD or make clean.
#
# The target architecture comes from $(CC) -dumpmachine. On x86-64, kernel
# files named *_avx2.c / *_avx512.c / *_amx.c are compiled with their ISA's
# flags (AMX: AVX-512's and the tile extensions');
# on arm64, src/backend/arm/*_neon.c need none (NEON is baseline) and
# *_dotprod.c get -march=armv8.2-a+dotprod. Everything else is built for
# the baseline of the architecture, and the right kernels are picked at
# run time; the other architecture's kernel files are not built (its
# tables.c returns no tables).

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= -g
WERROR  ?= -Werror
BUILD   ?= build

# -ffp-contract=off: no fused multiply-adds the source does not write. It is
# gcc's default for -std=c11; clang's default (on) fuses a*b+c in the scalar
# tails of the ISA files, which then differ from ref.c in the last bit.
INF_CFLAGS := -std=c11 -Wall -Wextra $(WERROR) -ffp-contract=off -D_GNU_SOURCE -Iinclude -Isrc
INF_LDLIBS := -lcjson -lutf8proc -ledit -lpthread -lm
SERVER_LDLIBS := -lmicrohttpd
HUB_LDLIBS    := -lcurl
SAN_FLAGS  :=
KERNEL_OPT        = $(OPT)
KERNEL_SAN_FLAGS  = $(SAN_FLAGS)

# Under ASan + UBSan (and TSan) the SIMD kernel files are built at -O1:
# gcc 12 takes ~210 s for quant_avx512.c at -O2 there (53 s at -O1, 39 s
# without the sanitizers), most of the sanitizer build's time; their
# tests run ~20% slower.
ifeq ($(SAN),1)
BUILD      := build-san
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
KERNEL_OPT := -O1
endif
ifeq ($(TSAN),1)
BUILD      := build-tsan
SAN_FLAGS  := -fsanitize=thread
KERNEL_OPT := -O1
endif
# The library for libFuzzer (CC=clang): ASan, UBSan and coverage feedback,
# at -O1. The SIMD kernel files get AddressSanitizer only, no coverage, and
# -O0: clang 14 takes ~95 s for attention_avx512.c with ASan at -O1 or -O2
# (~100 s with UBSan too), 6 s at -O0.
ifeq ($(FUZZ),1)
BUILD     := build-fuzz
OPT       := -O1
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
             -fsanitize=fuzzer-no-link
KERNEL_OPT       := -O0
KERNEL_SAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer
endif

ALL_CFLAGS    = $(OPT) $(CFLAGS) $(CPPFLAGS) $(INF_CFLAGS) $(SAN_FLAGS)
KERNEL_CFLAGS = $(KERNEL_OPT) $(CFLAGS) $(CPPFLAGS) $(INF_CFLAGS) $(KERNEL_SAN_FLAGS)
ALL_LDFLAGS   = $(LDFLAGS) $(SAN_FLAGS)

AVX2_FLAGS    := -mavx2 -mfma -mf16c
AVX512_FLAGS  := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c
AMX_FLAGS     := $(AVX512_FLAGS) -mamx-tile -mamx-int8 -mamx-bf16
DOTPROD_FLAGS := -march=armv8.2-a+dotprod

MACHINE     := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))
X86_KERNELS := $(wildcard src/backend/x86/*_avx2.c src/backend/x86/*_avx512.c src/backend/x86/*_amx.c)
ARM_KERNELS := $(wildcard src/backend/arm/*_neon.c src/backend/arm/*_dotprod.c)
ifeq ($(MACHINE),x86_64)
FOREIGN_KERNELS := $(ARM_KERNELS)
else ifneq ($(filter aarch64 arm64,$(MACHINE)),)
FOREIGN_KERNELS := $(X86_KERNELS)
else
FOREIGN_KERNELS := $(X86_KERNELS) $(ARM_KERNELS)
endif

LIB_SRC  := $(filter-out $(FOREIGN_KERNELS),$(shell find src -name '*.c' ! -path 'src/cli/*' ! -path 'src/server/*' \
                ! -path 'src/hub/*' | sort))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
# The HTTP server (inferno serve): a client of the public header, like the
# CLI, linked into the CLI binary and, as a library, into its tests.
SERVER_SRC := $(sort $(wildcard src/server/*.c))
# The Hugging Face hub client (inferno pull, -m ORG/NAME:TAG): the CLI's
# alone, so libcurl is linked into the CLI binary and its tests, never into
# libinferno.
HUB_SRC  := $(sort $(wildcard src/hub/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
TEST_LIB := tests/harness.c

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/obj/%.o)
HUB_OBJ  := $(HUB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

# The core and the backend without the tokenizer, the model and JSON, and
# the tests that need nothing more: what a cross build can link without
# the target's cJSON, utf8proc and libedit.
KERNEL_LIB_OBJ := $(filter $(BUILD)/obj/src/core/% $(BUILD)/obj/src/backend/%,$(LIB_OBJ))
KERNEL_TESTS   := test_kernels test_ops test_pool

all: $(BUILD)/inferno $(BUILD)/libinferno.a

$(BUILD)/libinferno.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libinferno-server.a: $(SERVER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libinferno-hub.a: $(HUB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/inferno: $(CLI_OBJ) $(BUILD)/libinferno-server.a $(BUILD)/libinferno-hub.a $(BUILD)/libinferno.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libinferno-server.a $(BUILD)/libinferno-hub.a \
	    $(BUILD)/libinferno.a $(LDLIBS) $(SERVER_LDLIBS) $(HUB_LDLIBS) $(INF_LDLIBS)

$(BUILD)/libinferno-kernels.a: $(KERNEL_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/%_dotprod.o: %_dotprod.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) $(DOTPROD_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_amx.o: %_amx.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) $(AMX_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) $(AVX512_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(KERNEL_CFLAGS) $(AVX2_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $(ALL_LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

# The server's tests link its library too.
$(BUILD)/tests/test_server_%: tests/test_server_%.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno-server.a \
                              $(BUILD)/libinferno.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $(ALL_LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno-server.a \
	    $(BUILD)/libinferno.a $(LDLIBS) $(SERVER_LDLIBS) $(INF_LDLIBS)

# The hub client's test links its library too.
$(BUILD)/tests/test_hub: tests/test_hub.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno-hub.a $(BUILD)/libinferno.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $(ALL_LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno-hub.a \
	    $(BUILD)/libinferno.a $(LDLIBS) $(HUB_LDLIBS) $(INF_LDLIBS)

$(BUILD)/kernel-tests/%: tests/%.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno-kernels.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $(ALL_LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno-kernels.a $(LDLIBS) -lpthread -lm

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests/fuzz $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

# The hub client's fuzz target links its library too.
$(BUILD)/fuzz_hub: tests/fuzz/fuzz_hub.c tests/fuzz/fuzz_common.h $(BUILD)/libinferno-hub.a $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests/fuzz $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno-hub.a \
	    $(BUILD)/libinferno.a $(LDLIBS) $(HUB_LDLIBS) $(INF_LDLIBS)

# The server's fuzz targets link its library too.
$(BUILD)/fuzz_server_%: tests/fuzz/fuzz_server_%.c tests/fuzz/fuzz_common.h $(BUILD)/libinferno-server.a \
                        $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests/fuzz $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno-server.a \
	    $(BUILD)/libinferno.a $(LDLIBS) $(SERVER_LDLIBS) $(INF_LDLIBS)

tests: $(TEST_BIN) $(BUILD)/inferno $(BUILD)/gguf_split

fuzz-targets: $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/%)

# Decode attention on contiguous and paged KV caches (not a test).
$(BUILD)/attn_bench: bench/attn_bench.c $(BUILD)/libinferno-kernels.a
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno-kernels.a -lpthread -lm

# One token's weight products read with the pool, and decoded, paired (not a test).
$(BUILD)/decode_ceiling: bench/decode_ceiling.c $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

# Decode over cache positions written for the first time, against again (not a test).
$(BUILD)/fresh_kv: bench/fresh_kv.c $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

# A synthetic GGUF as a Hugging Face checkpoint directory (not a test; scripts/synth-hf.sh).
$(BUILD)/gguf_to_hf: bench/gguf_to_hf.c $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

# A GGUF split as llama.cpp's gguf-split does (the CLI tests use it: bad_input.sh, pull.sh).
$(BUILD)/gguf_split: bench/gguf_split.c $(BUILD)/libinferno.a
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libinferno.a $(LDLIBS) $(INF_LDLIBS)

kernel-tests: $(KERNEL_TESTS:%=$(BUILD)/kernel-tests/%)

# One build's tests: C unit/golden tests and CLI tests (tests/cli/*.sh).
test: tests
	BUILD=$(BUILD) sh scripts/run-tests.sh

# The whole suite, the README's and CI's one command: every build (gcc,
# sanitizers, clang, arm64 under qemu) and the fuzz targets briefly. The
# script's makes choose their own flags and jobs (JOBS=N), so this make's
# -j and variables are not handed down to them.
check:
	MAKEFLAGS= MFLAGS= sh scripts/check.sh

clean:
	rm -rf build build-san build-tsan build-arm64 build-clang build-fuzz

.PHONY: all tests kernel-tests fuzz-targets test check clean
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
