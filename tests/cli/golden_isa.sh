#!/bin/sh
# The golden-model tests (test_golden: logits against llama.cpp's) on every
# kernel path this CPU can run (INFERNO_ISA=ref|avx2|avx512) and with 1, 2
# and 3 threads (INFERNO_GOLDEN_THREADS). ISAs the CPU lacks are skipped
# (and `inferno info` must then refuse them with a message naming the ISA).
# $INFERNO is the binary (set by scripts/run-tests.sh); the test programs
# sit beside it in tests/. Run from the repo root.
INFERNO=${INFERNO:-build/inferno}
GOLDEN="$(dirname "$INFERNO")/tests/test_golden"
pass=0
fail=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

if [ ! -x "$GOLDEN" ]; then
    echo "FAIL: $GOLDEN is not built"
    echo "0 passed, 1 failed"
    exit 1
fi

for isa in ref avx2 avx512; do
    if ! INFERNO_ISA=$isa "$INFERNO" info -m tests/data/golden/tiny-a-f32.gguf >"$tmp" 2>&1; then
        if grep -q "lacks $isa" "$tmp"; then
            echo "skip $isa: not supported on this CPU"
            pass=$((pass + 1))
        else
            echo "FAIL: inferno info with INFERNO_ISA=$isa:"
            sed 's/^/    /' "$tmp"
            fail=$((fail + 1))
        fi
        continue
    fi
    for threads in 1 2 3; do
        INFERNO_ISA=$isa INFERNO_GOLDEN_THREADS=$threads "$GOLDEN" >"$tmp" 2>&1
        rc=$?
        line=$(tail -n 1 "$tmp")
        if [ $rc -eq 0 ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: isa $isa, $threads threads: $line"
            grep '^FAIL' "$tmp" | head -n 5 | sed 's/^/    /'
        fi
    done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
