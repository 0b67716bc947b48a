#!/bin/sh
# fuzz.sh — builds the libFuzzer targets in tests/fuzz/ (clang, with
# AddressSanitizer and UndefinedBehaviorSanitizer) into build-fuzz/ and runs
# each for SECONDS (default 60), one after another, starting from its seed
# corpus. Not part of `make test` (it runs for minutes).
#
#   sh scripts/fuzz.sh [SECONDS] [TARGET...]     build, then run (all targets by default)
#   sh scripts/fuzz.sh --build                   build only
#
# Seeds: tests/fuzz/corpus/<target>/ (small, committed), plus, copied at run
# time, what is too big to commit: tiny synthetic models from build/inferno
# synth (fuzz_gguf; not the 1-2.6 MB golden models, which slow it from ~1000
# to under 100 runs/s and reach no code the small seeds miss), the chat
# requests of tests/data/chat and Qwen3's tokenizer_config.json
# (fuzz_chat_template), and the tokenizer corpus (fuzz_tokenizer). The
# working corpus grows in build-fuzz/corpus/<target>/; crash inputs land in
# build-fuzz/crashes/<target>/. To replay one:
#   build-fuzz/<target> build-fuzz/crashes/<target>/crash-...
# Exit status: 0 when no target crashed, 1 otherwise, 2 on usage errors.
set -eu
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

SECONDS_EACH=60
BUILD_ONLY=0
case "${1:-}" in
-h|--help) usage; exit 0 ;;
--build) BUILD_ONLY=1; shift ;;
'') ;;
*[!0-9]*) echo "fuzz.sh: SECONDS must be a number (see --help)" >&2; exit 2 ;;
*) SECONDS_EACH=$1; shift ;;
esac
ALL_TARGETS="fuzz_gguf fuzz_tokenizer fuzz_tokenizer_json fuzz_chat_template"
TARGETS=${*:-$ALL_TARGETS}
for t in $TARGETS; do
    [ -f "tests/fuzz/$t.c" ] || { echo "fuzz.sh: unknown target '$t' (targets: $ALL_TARGETS)" >&2; exit 2; }
done

CC=${FUZZ_CC:-clang}
OUT=build-fuzz
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=c11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc $SAN"
# SIMD kernel files: AddressSanitizer only, no coverage feedback (clang 14
# takes ~100 s on attention_avx512.c with ASan and UBSan together; the
# scalar reference ops keep both).
KERNEL_CFLAGS="-std=c11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc -fsanitize=address -fno-omit-frame-pointer"
AVX2_FLAGS="-mavx2 -mfma -mf16c"
AVX512_FLAGS="-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c"
LDLIBS="-lcjson -lutf8proc -lpthread -lm"

# ---- build: library objects once (instrumented for coverage), then one binary per target.
# An object is rebuilt when it is missing or older than a file its .d
# (written by the compiler) lists.
mkdir -p "$OUT/obj"
find src -name '*.c' ! -path 'src/cli/*' | sort > "$OUT/all-sources"
{ grep -E '_avx(2|512)\.c$' "$OUT/all-sources"; grep -vE '_avx(2|512)\.c$' "$OUT/all-sources"; } > "$OUT/sources" # slowest first
: > "$OUT/objects"
stale() { # obj
    [ -f "$1" ] && [ -f "$1.d" ] || return 0
    [ -n "$(sed -e 's/^[^:]*://' -e 's/\\$//' "$1.d" | xargs -r find 2>/dev/null -newer "$1" | head -1)" ]
}
while read -r src; do
    obj="$OUT/obj/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')"
    echo "$obj" >> "$OUT/objects"
    if stale "$obj"; then
        case "$src" in
        *_avx512.c) isa=$AVX512_FLAGS flags=$KERNEL_CFLAGS ;;
        *_avx2.c) isa=$AVX2_FLAGS flags=$KERNEL_CFLAGS ;;
        *) isa= flags="$CFLAGS -fsanitize=fuzzer-no-link" ;;
        esac
        # A source clang cannot compile (e.g. clang 14 lacks __builtin_cpu_supports("f16c"))
        # falls back to gcc without instrumentation, with a warning naming it.
        deps="-MMD -MF $obj.d"
        echo "$CC $flags $isa $deps -c -o $obj $src 2>$obj.log || { echo 'fuzz.sh: $src: not compiled by $CC (see $obj.log); using gcc without sanitizers' >&2; gcc -std=c11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc $isa $deps -c -o $obj $src; }"
    fi
done < "$OUT/sources" > "$OUT/compile"
if [ -s "$OUT/compile" ]; then
    echo "fuzz.sh: compiling $(wc -l < "$OUT/compile") library sources with $CC"
    tr '\n' '\0' < "$OUT/compile" | xargs -0 -P 2 -n 1 sh -c 'eval "$0" || exit 255'
fi
for t in $TARGETS; do
    $CC $CFLAGS -Wall -Wextra -Werror -fsanitize=fuzzer -Itests/fuzz -o "$OUT/$t" "tests/fuzz/$t.c" \
        $(cat "$OUT/objects") $LDLIBS
done
echo "fuzz.sh: built $(echo $TARGETS | sed "s|\([^ ]*\)|$OUT/\1|g")"
[ "$BUILD_ONLY" = 1 ] && exit 0

# ---- seeds that are made or copied at run time
seed_extra() { # target dir
    case "$1" in
    fuzz_gguf)
        if [ -x build/inferno ]; then
            for type in f32 f16 bf16 q8_0; do
                build/inferno synth -o "$2/synth-$type.gguf" --type "$type" --layers 1 --embd 32 --heads 2 \
                    --kv-heads 1 --head-dim 16 --ff 32 --vocab 300 --ctx 64 > /dev/null 2>&1 ||
                    echo "fuzz.sh: inferno synth --type $type failed; fuzz_gguf starts without that seed" >&2
            done
        else
            echo "fuzz.sh: build/inferno not built (make); fuzz_gguf starts without synthetic models" >&2
        fi ;;
    fuzz_tokenizer)
        # each text of the tokenizer test corpus (a JSON string per line) as one seed
        python3 -c 'import json, sys
for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    open("%s/corpus-%04d" % (sys.argv[2], i), "wb").write(json.loads(line).encode("utf-8", "surrogatepass"))
' tests/data/tokenizer/corpus.jsonl "$2" || echo "fuzz.sh: no python3; fuzz_tokenizer starts from its seeds only" >&2 ;;
    fuzz_chat_template)
        cp tests/data/chat/*.request.json "$2/" 2>/dev/null || true
        cp data/qwen3-tokenizer/tokenizer_config.json "$2/" 2>/dev/null || true ;;
    esac
}

# ---- run
FAILED=""
for t in $TARGETS; do
    corpus="$OUT/corpus/$t"
    crashes="$OUT/crashes/$t"
    mkdir -p "$corpus" "$crashes"
    seed_extra "$t" "$corpus"
    dict=""
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # longer texts only slow the text targets down (seeds past this are cut;
    # 16 KB keeps Qwen3's tokenizer_config.json whole)
    max_len=""
    case "$t" in
    fuzz_tokenizer) max_len="-max_len=8192" ;;
    fuzz_chat_template) max_len="-max_len=16384" ;;
    esac
    echo "fuzz.sh: $t for ${SECONDS_EACH}s (corpus $corpus)"
    # -timeout: every input here runs in milliseconds; one that takes 20 s is a hang
    if ! "$OUT/$t" -max_total_time="$SECONDS_EACH" -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict $max_len "$corpus" "tests/fuzz/corpus/$t" 2> "$OUT/$t.log"; then
        FAILED="$FAILED $t"
    fi
    grep -a -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|^SUMMARY|^==[0-9]+==ERROR|check failed' \
        "$OUT/$t.log" || true
done
if [ -n "$FAILED" ]; then
    echo "fuzz.sh: FAILED:$FAILED (logs: $OUT/<target>.log, inputs: $OUT/crashes/<target>/)" >&2
    exit 1
fi
echo "fuzz.sh: no crashes"
