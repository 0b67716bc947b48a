# inferno — build the library, the CLI (build/inferno) and the tests.
#
#   make                  library + CLI
#   make test             build and run the whole test suite
#   make SAN=1            AddressSanitizer + UndefinedBehaviorSanitizer build (in build-san/)
#   make TSAN=1           ThreadSanitizer build (in build-tsan/)
#
# Kernel files named *_avx2.c / *_avx512.c are compiled with their ISA's
# flags; everything else is baseline x86-64, and the right kernels are
# picked at run time.

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

AVX2_FLAGS   := -mavx2 -mfma -mf16c
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c

LIB_SRC  := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_LIB := tests/harness.c

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

all: $(BUILD)/inferno $(BUILD)/libinferno.a

$(BUILD)/libinferno.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/inferno: $(CLI_OBJ) $(BUILD)/libinferno.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libinferno.a $(LDLIBS)

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

tests: $(TEST_BIN) $(BUILD)/inferno

# The whole suite: C unit/golden tests and CLI tests (tests/cli/*.sh).
test: tests
	BUILD=$(BUILD) sh scripts/run-tests.sh

clean:
	rm -rf build build-san build-tsan

.PHONY: all tests test clean
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
