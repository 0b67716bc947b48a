# inferno — build the library, the CLI (build/inferno) and the tests.
#
#   make                  library + CLI
#   make test             build and run the whole test suite
#   make SAN=1            AddressSanitizer + UndefinedBehaviorSanitizer build (in build-san/)
#   make TSAN=1           ThreadSanitizer build (in build-tsan/)
#   make kernel-tests     the backend alone and its tests (no cJSON etc.)
#   make build/attn_bench decode attention, contiguous vs paged KV (bench/attn_bench.c)
#   make CC=aarch64-linux-gnu-gcc BUILD=build-arm64 kernel-tests
#                         an arm64 cross build (scripts/check-arm64.sh)
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
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc $(CFLAGS_EXTRA)
LDLIBS  := -lcjson -lutf8proc -ledit -lpthread -lm
BUILD   ?= build

ifeq ($(SAN),1)
BUILD   := build-san
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(TSAN),1)
BUILD   := build-tsan
CFLAGS  += -fsanitize=thread
LDFLAGS += -fsanitize=thread
endif

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

LIB_SRC  := $(filter-out $(FOREIGN_KERNELS),$(shell find src -name '*.c' ! -path 'src/cli/*' | sort))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_LIB := tests/harness.c

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
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

$(BUILD)/inferno: $(CLI_OBJ) $(BUILD)/libinferno.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libinferno.a $(LDLIBS)

$(BUILD)/libinferno-kernels.a: $(KERNEL_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/%_dotprod.o: %_dotprod.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DOTPROD_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_amx.o: %_amx.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AMX_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AVX512_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(AVX2_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno.a $(LDLIBS)

$(BUILD)/kernel-tests/%: tests/%.c $(TEST_LIB) tests/harness.h $(BUILD)/libinferno-kernels.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libinferno-kernels.a -lpthread -lm

tests: $(TEST_BIN) $(BUILD)/inferno

# Decode attention on contiguous and paged KV caches (not a test).
$(BUILD)/attn_bench: bench/attn_bench.c $(BUILD)/libinferno-kernels.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libinferno-kernels.a -lpthread -lm

kernel-tests: $(KERNEL_TESTS:%=$(BUILD)/kernel-tests/%)

# The whole suite: C unit/golden tests and CLI tests (tests/cli/*.sh).
test: tests
	BUILD=$(BUILD) sh scripts/run-tests.sh

clean:
	rm -rf build build-san build-tsan build-arm64

.PHONY: all tests kernel-tests test clean
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
