#!/bin/sh
# CLI test of `inferno bench` on the tiny golden model (small cases, 1-2
# repetitions, an 8 MiB bandwidth buffer: a few seconds): --json prints one
# object per case with the stable field names scripts read, then a summary;
# the table names the model, kernels and threads; usage errors give one line
# on stderr and exit 2, a missing model exits 1. No speed is asserted.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
MODEL=tests/data/golden/tiny-a-q8_0.gguf

# expect_exit WHAT CODE ARGS...: exit code and exactly one line on stderr
expect_exit() {
    what=$1 code=$2
    shift 2
    "$INFERNO" bench "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ]; then ok; else bad "$what: exit $rc (want $code), $lines stderr lines"; cat "$tmp/err"; fi
}

check "--help exits 0 with usage on stdout" '"$INFERNO" bench --help | grep -q "^usage: inferno bench"'
expect_exit "no model" 2 -p 4
expect_exit "unknown flag" 2 -m "$MODEL" --frobnicate
expect_exit "bad -p list" 2 -m "$MODEL" -p 4,x
expect_exit "negative -d" 2 -m "$MODEL" -d -1
expect_exit "-r 0" 2 -m "$MODEL" -r 0
expect_exit "-n without value" 2 -m "$MODEL" -n
expect_exit "--kv-type f8" 2 -m "$MODEL" --kv-type f8
expect_exit "nothing to measure" 2 -m "$MODEL" -p 0 -n 0
expect_exit "-c below the largest case" 2 -m "$MODEL" -p 32 -n 0 -c 16
expect_exit "missing model file" 1 -m "$tmp/none.gguf" -p 4 -n 0

# --json: 2 prefill + 2 decode cases + the summary, stable names
if "$INFERNO" bench -m "$MODEL" -t 2 -p 4,9 -n 3 -d 0,5 -r 2 --bw-mib 8 --json >"$tmp/json" 2>"$tmp/err"; then
    ok
else
    bad "bench --json failed"
    cat "$tmp/err"
fi
check "--json: 5 lines" '[ "$(wc -l <"$tmp/json")" -eq 5 ]'
check "--json: nothing on stderr (not a terminal)" '[ ! -s "$tmp/err" ]'
check "--json: 2 prefill lines" '[ "$(grep -c "\"kind\": \"prefill\"" "$tmp/json")" -eq 2 ]'
check "--json: 2 decode lines" '[ "$(grep -c "\"kind\": \"decode\"" "$tmp/json")" -eq 2 ]'
check "--json: summary last" 'tail -n 1 "$tmp/json" | grep -q "\"kind\": \"summary\""'
for field in tokens depth threads tok_s_median tok_s_min tok_s_max; do
    check "--json: every case has $field" '[ "$(grep -v summary "$tmp/json" | grep -c "\"$field\": [0-9]")" -eq 4 ]'
done
check "--json: prefill cases have ttft_ms_median" '[ "$(grep -c "\"ttft_ms_median\": [0-9]" "$tmp/json")" -eq 2 ]'
check "--json: decode cases have gb_s and bw_pct" '[ "$(grep "\"kind\": \"decode\"" "$tmp/json" | grep "\"gb_s\": [0-9]" | grep -c "\"bw_pct\": [0-9]")" -eq 2 ]'
check "--json: decode cases have the bandwidth measured around them" '[ "$(grep "\"kind\": \"decode\"" "$tmp/json" | grep "\"bw_gb_s_before\": [0-9]" | grep "\"bw_gb_s_after\": [0-9]" | grep -c "\"bw_gb_s\": [0-9]")" -eq 2 ]'
check "--json: a decode case's figure is the higher of before and after" 'grep "\"kind\": \"decode\"" "$tmp/json" | sed "s/.*\"bw_gb_s\": \([0-9.]*\), \"bw_gb_s_before\": \([0-9.]*\), \"bw_gb_s_after\": \([0-9.]*\).*/\1 \2 \3/" | awk "NF != 3 || (\$1 != \$2 && \$1 != \$3) || \$1 < \$2 || \$1 < \$3 { bad = 1 } END { exit bad }"'
check "--json: case 9 tokens at depth 0" 'grep -q "\"kind\": \"prefill\", \"tokens\": 9, \"depth\": 0, \"threads\": 2" "$tmp/json"'
check "--json: decode 3 after 5" 'grep -q "\"kind\": \"decode\", \"tokens\": 3, \"depth\": 5, \"threads\": 2" "$tmp/json"'
for field in load_s peak_rss_mb bandwidth_gb_s weight_bytes; do
    check "--json: summary has $field" 'tail -n 1 "$tmp/json" | grep -q "\"$field\": [0-9]"'
done
check "--json: summary names the kernel path" 'tail -n 1 "$tmp/json" | grep -q "\"isa\": \"[a-z0-9+]*\""'
check "--json: min <= median <= max" 'grep -v summary "$tmp/json" | sed "s/.*\"tok_s_median\": \([0-9.]*\), \"tok_s_min\": \([0-9.]*\), \"tok_s_max\": \([0-9.]*\).*/\2 \1 \3/" | awk "\$1 > \$2 || \$2 > \$3 { bad = 1 } END { exit bad }"'

# the table, f16 KV, no bandwidth measurement, no warm-up
if "$INFERNO" bench -m "$MODEL" -t 1 -p 5 -n 2 -d 3 -r 1 --bw-mib 0 --kv-type f16 --no-warmup >"$tmp/table" 2>"$tmp/err"; then
    ok
else
    bad "bench (table) failed"
    cat "$tmp/err"
fi
check "table: header names the model" 'head -n 1 "$tmp/table" | grep -q "tiny-a-q8_0.gguf"'
check "table: kernels and threads" 'grep -q "kernels [a-z0-9+]*, 1 threads" "$tmp/table"'
check "table: f16 KV cache" 'grep -q "KV cache f16" "$tmp/table"'
check "table: a pp5 row" 'grep -q "^  pp5 " "$tmp/table"'
check "table: a tg2 @ d3 row" 'grep -q "^  tg2 @ d3 " "$tmp/table"'
check "table: peak RSS" 'grep -q "peak RSS" "$tmp/table"'

# --trace: the op table at exit; where the kernels have prefetch hints to
# choose from (avx512), the line that says which one the tuner uses
"$INFERNO" bench -m "$MODEL" -t 2 -p 5 -n 2 -d 3 -r 1 --bw-mib 0 --trace >"$tmp/trace" 2>&1
check "--trace: the op table" 'grep -q "^op trace, backend " "$tmp/trace" && grep -q "^matmul " "$tmp/trace"'
if grep -q "^op trace, backend avx512" "$tmp/trace"; then
    # one entry per weight type that ran tuned: "q8_0 NTA (trials won: L2 0, NTA 0)"
    check "--trace: the weight prefetch hint" 'grep -q "^weight prefetch [a-z0-9_]* \(NTA\|L2\) (trials won: L2 [0-9]*, NTA [0-9]*)\(, [a-z0-9_]* \(NTA\|L2\) (trials won: L2 [0-9]*, NTA [0-9]*)\)*$" "$tmp/trace"'
fi
INFERNO_ISA=ref "$INFERNO" bench -m "$MODEL" -t 2 -p 5 -n 2 -d 3 -r 1 --bw-mib 0 --trace >"$tmp/trace" 2>&1
check "--trace, ref: no prefetch line" '! grep -q "^weight prefetch" "$tmp/trace"'

# q8_0 KV cache (tiny-b: head_dim 64): named in the JSON, 34 bytes per 32 elements
if "$INFERNO" bench -m tests/data/golden/tiny-b-f32.gguf -t 1 -p 4 -n 2 -d 3 -r 1 --bw-mib 0 --kv-type q8_0 --no-warmup \
    --json >"$tmp/q8" 2>"$tmp/err"; then
    ok
else
    bad "bench --kv-type q8_0 failed"
    cat "$tmp/err"
fi
check "--kv-type q8_0: JSON kv_type" '[ "$(grep -c "\"kv_type\": \"q8_0\"" "$tmp/q8")" -eq 3 ]'
# 2 layers x 5 positions x 2 KV heads x 64 x 2 (K and V) elements, 34/32 bytes each
check "--kv-type q8_0: KV cache bytes" 'tail -n 1 "$tmp/q8" | grep -q "\"kv_cache_bytes\": 2720,"'
# decode steps attend over 4.5 positions on average: 2 x 4.5 x 2 x 64 x 2 x 34/32
check "--kv-type q8_0: KV bytes per token" 'grep -q "\"kv_bytes_per_tok\": 2448," "$tmp/q8"'


# the engine cases: --parallel rows and the prefix-cache row, stable names
expect_exit "--parallel 0" 2 -m "$MODEL" --parallel 0
expect_exit "--prefix without value" 2 -m "$MODEL" --prefix
if "$INFERNO" bench -m "$MODEL" -t 2 --parallel 1,3 -n 4 -d 6 -r 2 --bw-mib 0 --json >"$tmp/par" 2>"$tmp/err"; then ok; else bad "bench --parallel failed"; cat "$tmp/err"; fi
check "--parallel: a row per N" '[ "$(grep -c "\"kind\": \"parallel\"" "$tmp/par")" -eq 2 ]'
for key in streams tokens depth threads tok_s_median tok_s_min tok_s_max; do
    check "--parallel: $key" 'grep "\"kind\": \"parallel\"" "$tmp/par" | grep -q "\"'$key'\": [0-9]"'
done
check "--parallel: streams 3, depth 6" 'grep -q "\"kind\": \"parallel\", \"tokens\": 4, \"depth\": 6.*\"streams\": 3" "$tmp/par"'
if "$INFERNO" bench -m "$MODEL" -t 2 --prefix 40 --suffix 5 -r 2 --bw-mib 0 --json >"$tmp/pre" 2>"$tmp/err"; then ok; else bad "bench --prefix failed"; cat "$tmp/err"; fi
for key in cold_ttft_ms_median cached_ttft_ms_median; do
    check "--prefix: $key" 'grep "\"kind\": \"prefix_cache\"" "$tmp/pre" | grep -q "\"'$key'\": [0-9]"'
done
check "--prefix: the cached requests hit" 'grep "\"kind\": \"prefix_cache\"" "$tmp/pre" | grep -Eq "\"hit_tokens\": [1-9]"'

finish
