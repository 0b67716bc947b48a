#!/bin/sh
# fuzz.sh — builds the libFuzzer targets in tests/fuzz/ (clang, with
# AddressSanitizer and UndefinedBehaviorSanitizer: make CC=clang FUZZ=1
# fuzz-targets) into build-fuzz/ and runs each for SECONDS (default 60), one
# after another, starting from its seed corpus. Not part of `make test`
# (it runs for minutes); `make check` runs every target briefly (--runs).
#
#   sh scripts/fuzz.sh [SECONDS] [TARGET...]     build, then run (all targets by default)
#   sh scripts/fuzz.sh --runs N [SECONDS] [TARGET...]
#                                                a smoke run: every seed, then N
#                                                generated inputs (at most SECONDS),
#                                                from a fresh corpus each time
#   sh scripts/fuzz.sh --build                   build only
#
# Seeds: tests/fuzz/corpus/<target>/ (small, committed), plus, copied at run
# time, what is too big to commit: tiny synthetic models from build/inferno
# synth (fuzz_gguf; not the 1-2.6 MB golden models, which slow it from ~1000
# to under 100 runs/s and reach no code the small seeds miss), the chat
# requests of tests/data/chat and tests/data/chat-prompt and Qwen3's
# tokenizer_config.json (fuzz_chat_template), and the tokenizer corpus (fuzz_tokenizer). The
# working corpus grows in build-fuzz/corpus/<target>/ (a --runs smoke run
# uses build-fuzz/smoke/<target>/ and empties it first); crash inputs land
# in build-fuzz/crashes/<target>/. To replay one:
#   build-fuzz/<target> build-fuzz/crashes/<target>/crash-...
# Ends with "N passed, N failed" (a target passes when it did not crash).
# Exit status: 0 when no target crashed, 1 otherwise, 2 on usage errors.
set -eu
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

SECONDS_EACH=60
BUILD_ONLY=0
RUNS=""
case "${1:-}" in
-h|--help) usage; exit 0 ;;
--build) BUILD_ONLY=1; shift ;;
--runs)
    case "${2:-}" in
    ''|*[!0-9]*) echo "fuzz.sh: --runs needs a number (see --help)" >&2; exit 2 ;;
    esac
    RUNS=$2
    shift 2 ;;
esac
case "${1:-}" in
-*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
'') ;;
*[!0-9]*) echo "fuzz.sh: SECONDS must be a number (see --help)" >&2; exit 2 ;;
*) SECONDS_EACH=$1; shift ;;
esac
ALL_TARGETS=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' ')
TARGETS=${*:-$ALL_TARGETS}
for t in $TARGETS; do
    [ -f "tests/fuzz/$t.c" ] || { echo "fuzz.sh: unknown target '$t' (targets: $ALL_TARGETS)" >&2; exit 2; }
done

OUT=build-fuzz
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# ---- build (the Makefile's FUZZ=1 flags; make tracks what is stale)
BINS=$(for t in $TARGETS; do printf '%s/%s ' "$OUT" "$t"; done)
if ! ${MAKE:-make} -s -j"$JOBS" CC="${FUZZ_CC:-clang}" FUZZ=1 $BINS >/dev/null; then
    ${MAKE:-make} -j1 CC="${FUZZ_CC:-clang}" FUZZ=1 $BINS 2>&1 | tail -n 30
    echo "fuzz.sh: build failed" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
echo "fuzz.sh: built $BINS"
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
        cp tests/data/chat-prompt/*.request.json "$2/" 2>/dev/null || true
        cp data/qwen3-tokenizer/tokenizer_config.json "$2/" 2>/dev/null || true ;;
    esac
}

# ---- run
FAILED=""
n_pass=0
n_fail=0
for t in $TARGETS; do
    if [ -n "$RUNS" ]; then
        corpus="$OUT/smoke/$t"
        rm -rf "$corpus"
        limits="-runs=$RUNS -max_total_time=$SECONDS_EACH"
        what="$RUNS runs (at most ${SECONDS_EACH}s)"
    else
        corpus="$OUT/corpus/$t"
        limits="-max_total_time=$SECONDS_EACH"
        what="${SECONDS_EACH}s"
    fi
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
    fuzz_chat_template|fuzz_server_request) max_len="-max_len=16384" ;;
    esac
    echo "fuzz.sh: $t for $what (corpus $corpus)"
    # -timeout: every input here runs in milliseconds; one that takes 20 s is a hang
    if "$OUT/$t" $limits -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict $max_len "$corpus" "tests/fuzz/corpus/$t" 2> "$OUT/$t.log"; then
        n_pass=$((n_pass + 1))
    else
        FAILED="$FAILED $t"
        n_fail=$((n_fail + 1))
    fi
    grep -a -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|^SUMMARY|^==[0-9]+==ERROR|check failed' \
        "$OUT/$t.log" || true
done
if [ -n "$FAILED" ]; then
    echo "fuzz.sh: FAILED:$FAILED (logs: $OUT/<target>.log, inputs: $OUT/crashes/<target>/)" >&2
else
    echo "fuzz.sh: no crashes"
fi
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
