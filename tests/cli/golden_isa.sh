#!/bin/sh
# The golden-model tests (test_golden: logits against llama.cpp's) on every
# kernel path this CPU can run (INFERNO_ISA=ref|avx2|avx512|avx512+amx|neon)
# and with 1, 2 and 3 threads (INFERNO_GOLDEN_THREADS; ref, ~30 s a run,
# with 3 only: test_kernels holds its ops to ref.c bit for bit at 1, 2
# and 3 threads), then once with the
# weights in the file's layout on the ISAs that repack, avx512 and
# avx512+amx (INFERNO_GOLDEN_NO_REPACK: their other kernels run). GOLDEN_ISA_THREADS
# ="3" runs only the counts given, GOLDEN_ISA_LIST only the ISAs given:
# scripts/check.sh runs 3 threads and no ref in the sanitizer build, after
# the plain build checked that the counts agree and ref matches (ref.c's
# ops run under the sanitizers in test_kernels, at ragged sizes).
# ISAs the CPU lacks are skipped, and `inferno info` must then refuse them
# with a message naming the ISA.
# The test programs sit beside $INFERNO in tests/. Run from the repo root.
. tests/cli/lib.sh
GOLDEN="$(dirname "$INFERNO")/tests/test_golden"

if [ ! -x "$GOLDEN" ]; then
    bad "$GOLDEN is not built"
    finish
fi

for isa in ${GOLDEN_ISA_LIST:-ref avx2 avx512 avx512+amx neon}; do
    if ! INFERNO_ISA=$isa "$INFERNO" info -m tests/data/golden/tiny-a-f32.gguf >"$tmp/info" 2>&1; then
        if grep -q "lacks $isa" "$tmp/info"; then
            echo "skip $isa: not supported on this CPU"
            ok
        else
            bad "inferno info with INFERNO_ISA=$isa:"
            sed 's/^/    /' "$tmp/info"
        fi
        continue
    fi
    thread_counts=${GOLDEN_ISA_THREADS:-1 2 3}
    [ "$isa" = ref ] && thread_counts=3
    for threads in $thread_counts; do
        if INFERNO_ISA=$isa INFERNO_GOLDEN_THREADS=$threads "$GOLDEN" >"$tmp/out" 2>&1; then
            ok
        else
            bad "isa $isa, $threads threads: $(tail -n 1 "$tmp/out")"
            grep '^FAIL' "$tmp/out" | head -n 5 | sed 's/^/    /'
        fi
    done
    case $isa in avx512|avx512+amx) ;; *) continue ;; esac # the others never repack
    if INFERNO_ISA=$isa INFERNO_GOLDEN_NO_REPACK=1 "$GOLDEN" >"$tmp/out" 2>&1; then
        ok
    else
        bad "isa $isa, --no-repack: $(tail -n 1 "$tmp/out")"
        grep '^FAIL' "$tmp/out" | head -n 5 | sed 's/^/    /'
    fi
done
finish
