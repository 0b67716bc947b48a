#!/bin/sh
# CLI test of `inferno quantize`: usage errors exit 2 with one stderr line
# naming the problem and write nothing; tiny-b-f32 quantized to q6_k loads
# with `inferno info` and reports q6_k and q8_0 tensors (test_quantize checks
# the blocks against llama.cpp's). A second or so.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh

expect_exit() {
    what=$1 code=$2 pattern=$3
    shift 3
    rm -f "$tmp/x.gguf"
    "$INFERNO" quantize "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q -e "$pattern" "$tmp/err" && [ ! -e "$tmp/x.gguf" ]; then
        ok
    else
        bad "$what: exit $rc (want $code), $lines stderr lines, want '$pattern'"
        cat "$tmp/err"
    fi
}

SRC=tests/data/golden/tiny-b-f32.gguf
check "--help exits 0 with usage on stdout" '"$INFERNO" quantize --help | grep -q "^usage: inferno quantize"'
for mix in q4_1 q5_0 q5_1 iq4_nl iq4_xs q2_k q3_k_s q3_k_m q3_k_l q4_k_s q5_k_s; do
    check "--help lists $mix" '"$INFERNO" quantize --help | grep -q -w "$mix"'
done
expect_exit "no type" 2 "TYPE" "$SRC" "$tmp/x.gguf"
expect_exit "the unknown type's error lists the mixes" 2 "q3_k_l" "$SRC" "$tmp/x.gguf" q9_k
expect_exit "unknown type" 2 "iq2_xs" "$SRC" "$tmp/x.gguf" iq2_xs
expect_exit "unknown flag" 2 "--frobnicate" "$SRC" "$tmp/x.gguf" q8_0 --frobnicate
expect_exit "bad -t" 2 "-t" "$SRC" "$tmp/x.gguf" q8_0 -t 0
expect_exit "missing input" 1 "no-such.gguf" "$tmp/no-such.gguf" "$tmp/x.gguf" q8_0
expect_exit "quantized input" 1 "already" tests/data/golden/tiny-q-q4_0.gguf "$tmp/x.gguf" q8_0

if "$INFERNO" quantize "$SRC" "$tmp/q6.gguf" q6_k 2>"$tmp/err"; then ok; else bad "quantize failed"; cat "$tmp/err"; fi
check "the quantized file loads" '"$INFERNO" info -m "$tmp/q6.gguf" --tensors >"$tmp/info" 2>&1'
check "it holds q6_k tensors" 'grep -qi "q6_k" "$tmp/info"'
check "and q8_0 fallbacks" 'grep -qi "q8_0" "$tmp/info"'
check "no temporary file is left" '[ ! -e "$tmp/q6.gguf.tmp" ]'
finish
