#!/bin/sh
# Regenerates the quantized goldens of tests/data/golden (see its README):
# llama.cpp's own quantizer (llama_model_quantize, bench/llama_quantize.c)
# writes every GGUF block type and mix from three F32 models, and llama.cpp's
# logits on the first fourteen files are the goldens, 2 threads:
#   tiny-q-f32   made here by `inferno synth` (not committed): widths 256,
#                so the K-quants apply everywhere; quantized to q4_0 q4_1
#                q5_0 q5_1 iq4_nl q2_k q3_k_m q4_k_m q5_k_m q6_k iq4_xs
#                (with logits) and q3_k_s q3_k_l q4_k_s q5_k_s (without)
#   tiny-b-f32   (committed): widths 64 and 128, which are not multiples of
#                256, so llama.cpp falls back per tensor (q4_k_m: q5_0 and
#                q8_0 beside q4_K; q5_k_m: q5_1 and q8_0 beside q5_K; q6_k:
#                q8_0 beside q6_K); q4_k_m q5_k_m q6_k (with logits) and
#                q2_k q3_k_l iq4_xs (without: q4_0, q5_1, iq4_nl fallbacks)
#   tiny-l-f32   made here by `inferno synth` (not committed): 16 layers,
#                widths 64, 4 query heads per KV head, so the mixes' per-layer
#                and n_gqa rules pick different tensors (told apart by their
#                fallback types); q2_k q3_k_m q4_k_s q4_k_m iq4_xs (without)
#   M.pN.json        f32 KV cache, flash attention off, top-20 at every
#                    position and at the last, 32 greedy tokens with margins
#   M.pN.final.f32   all final-position logits (raw little-endian float32)
#   M.pN.kvf16.json  f16 KV cache, flash attention auto (llama.cpp's defaults):
#                    llama.cpp's own spread, which test_golden budgets by
# The files without logits are for test_quantize only (their block types
# are among those with logits).
#
#   sh scripts/gen-quant-golden.sh            regenerate into .deps/golden-quant
#                                             and compare with the committed files
#   sh scripts/gen-quant-golden.sh --update   also copy them over the committed ones
# Needs build/inferno (make). Exit status 0 when every regenerated file
# agrees with the committed one.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOLDEN="$ROOT/tests/data/golden"
OUT="$ROOT/.deps/golden-quant"
update=0
case "${1:-}" in
    "") ;;
    --update) update=1 ;;
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gen-quant-golden: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac

LLAMA=$(sh "$ROOT/scripts/install-llama.sh")
QUANTIZE="$(dirname "$LLAMA")/llama_quantize"
INFERNO="$ROOT/build/inferno"
[ -x "$INFERNO" ] || { echo "gen-quant-golden: build inferno first (make)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/prompts" "$OUT/src"

printf '%s' 'The quick brown fox jumps over the lazy dog.' >"$OUT/prompts/p1"
printf '%s\n' '<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant' >"$OUT/prompts/p2"
printf '%s' 'def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

print(fib(30))  # 832040, café naïve 東京' >"$OUT/prompts/p3"

"$INFERNO" synth -o "$OUT/src/tiny-q-f32.gguf" --type f32 --layers 2 --embd 256 --ff 256 --heads 4 \
    --kv-heads 2 --head-dim 64 --ctx 512 --vocab 1024 --name tiny-q --seed 11 >/dev/null
"$INFERNO" synth -o "$OUT/src/tiny-l-f32.gguf" --type f32 --layers 16 --embd 64 --ff 64 --heads 4 \
    --kv-heads 1 --head-dim 16 --ctx 512 --vocab 1024 --name tiny-l --seed 17 >/dev/null
cp "$GOLDEN/tiny-b-f32.gguf" "$OUT/src/tiny-b-f32.gguf"

# quantize SOURCE MIX...: llama.cpp's OUT/tiny-SOURCE-MIX.gguf for each mix
quantize() {
    src=$1
    shift
    for t in "$@"; do
        "$QUANTIZE" "$OUT/src/tiny-$src-f32.gguf" "$OUT/tiny-$src-$t.gguf" "$t" 2 >"$OUT/src/tiny-$src-$t.log" 2>&1
    done
}

with_logits="q4_0 q4_1 q5_0 q5_1 iq4_nl q2_k q3_k_m q4_k_m q5_k_m q6_k iq4_xs"
quantize q $with_logits q3_k_s q3_k_l q4_k_s q5_k_s
quantize b q4_k_m q5_k_m q6_k q2_k q3_k_l iq4_xs
quantize l q2_k q3_k_m q4_k_s q4_k_m iq4_xs
models=""
for t in $with_logits; do models="$models tiny-q-$t"; done
for t in q4_k_m q5_k_m q6_k; do models="$models tiny-b-$t"; done

for model in $models; do
    for p in p1 p2 p3; do
        "$LLAMA" logits -m "$OUT/$model.gguf" -f "$OUT/prompts/$p" -t 2 --top 20 --gen 32 \
            --kv-type f32 --fa off --all-pos --dump "$OUT/$model.$p.final.f32" >"$OUT/$model.$p.json" 2>/dev/null
        "$LLAMA" logits -m "$OUT/$model.gguf" -f "$OUT/prompts/$p" -t 2 --top 20 --gen 32 \
            --kv-type f16 --fa auto >"$OUT/$model.$p.kvf16.json" 2>/dev/null
    done
done

without_timings() {
    sed -e 's/"seconds": [-0-9.e+]*/"seconds": _/' -e 's/"prompt_seconds": [-0-9.e+]*/"prompt_seconds": _/' "$1"
}
n_same=0
n_diff=0
for f in "$OUT"/*.gguf "$OUT"/*.json "$OUT"/*.f32; do
    name=$(basename "$f")
    committed="$GOLDEN/$name"
    if [ ! -f "$committed" ]; then
        echo "gen-quant-golden: $name: new (no committed file)"
        n_diff=$((n_diff + 1))
        continue
    fi
    case "$name" in
        *.json) without_timings "$f" >"$OUT/.a"; without_timings "$committed" >"$OUT/.b"
                cmp -s "$OUT/.a" "$OUT/.b" && same=1 || same=0 ;;
        *) cmp -s "$f" "$committed" && same=1 || same=0 ;;
    esac
    if [ $same -eq 1 ]; then n_same=$((n_same + 1)); else
        n_diff=$((n_diff + 1))
        echo "gen-quant-golden: $name DIFFERS from the committed file"
    fi
done
rm -f "$OUT/.a" "$OUT/.b"
echo "gen-quant-golden: $n_same files agree with tests/data/golden, $n_diff differ (regenerated in $OUT)"
if [ $update -eq 1 ]; then
    cp "$OUT"/*.gguf "$OUT"/*.json "$OUT"/*.f32 "$GOLDEN/"
    echo "gen-quant-golden: copied the regenerated files into $GOLDEN"
fi
[ $n_diff -eq 0 ]
