#!/bin/sh
# Regenerates the llama.cpp goldens of tests/data/golden (see its README)
# from the tiny-a, tiny-b and tiny-y (YaRN) GGUFs there, with llama.cpp's prebuilt CPU build
# and our harness (scripts/install-llama.sh, bench/llama_bench.c), 2 threads:
#   M.pN.json        f32 KV cache, flash attention off, top-20 at every
#                    position and at the last, 32 greedy tokens with margins
#   M.pN.final.f32   all final-position logits (raw little-endian float32)
#   M.pN.kvf16.json  f16 KV cache, flash attention auto (llama.cpp's defaults)
#   M.pN.kvq8_0.json q8_0 K and V caches, flash attention on (llama.cpp's
#                    -ctk q8_0 -ctv q8_0 -fa on), llama.cpp's default run: it
#                    rotates q, k and v by Hadamard matrices around the
#                    quantized cache, as inferno does (LLAMA_ATTN_ROT_DISABLE
#                    unset; see tests/data/golden/README.md); tiny-b only, since
#                    a q8_0 row needs head_dim a multiple of 32 (tiny-a's is 16)
#
#   sh scripts/gen-golden.sh            regenerate into .deps/golden and compare
#                                       with the committed files (timings aside)
#   sh scripts/gen-golden.sh --update   also copy the regenerated files over the
#                                       committed ones (after changing a model)
# Exit status 0 when every regenerated file agrees with the committed one.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GOLDEN="$ROOT/tests/data/golden"
OUT="$ROOT/.deps/golden"
update=0
case "${1:-}" in
    "") ;;
    --update) update=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gen-golden: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac

LLAMA=$(sh "$ROOT/scripts/install-llama.sh")
rm -rf "$OUT"
mkdir -p "$OUT/prompts"

# The prompts, byte for byte (p2 ends with a newline, p3 does not).
printf '%s' 'The quick brown fox jumps over the lazy dog.' >"$OUT/prompts/p1"
printf '%s\n' '<|im_start|>user
What is the capital of France?<|im_end|>
<|im_start|>assistant' >"$OUT/prompts/p2"
printf '%s' 'def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

print(fib(30))  # 832040, café naïve 東京' >"$OUT/prompts/p3"

for model in tiny-a-f32 tiny-a-f16 tiny-a-bf16 tiny-a-q8_0 tiny-b-f32 tiny-y-f32; do
    gguf="$GOLDEN/$model.gguf"
    for p in p1 p2 p3; do
        base="$model.$p"
        "$LLAMA" logits -m "$gguf" -f "$OUT/prompts/$p" -t 2 --top 20 --gen 32 \
            --kv-type f32 --fa off --all-pos --dump "$OUT/$base.final.f32" >"$OUT/$base.json"
        "$LLAMA" logits -m "$gguf" -f "$OUT/prompts/$p" -t 2 --top 20 --gen 32 \
            --kv-type f16 --fa auto >"$OUT/$base.kvf16.json"
        case "$model" in tiny-b-*)
            env -u LLAMA_ATTN_ROT_DISABLE "$LLAMA" logits -m "$gguf" -f "$OUT/prompts/$p" -t 2 --top 20 \
                --gen 32 --kv-type q8_0 --fa on 2>/dev/null >"$OUT/$base.kvq8_0.json" ;;
        esac
    done
done

# tiny-y (YaRN keys) also far out in its 131072-token window: the prompt at
# positions 100000.. and 131000.. of an empty cache (--pos0), as llama.cpp
# places a batch there.
for far in "p1 100000" "p3 131000"; do
    set -- $far
    base="tiny-y-f32.$1-far"
    "$LLAMA" logits -m "$GOLDEN/tiny-y-f32.gguf" -f "$OUT/prompts/$1" -t 2 --top 20 --gen 32 --pos0 "$2" \
        --kv-type f32 --fa off --all-pos --dump "$OUT/$base.final.f32" >"$OUT/$base.json"
    "$LLAMA" logits -m "$GOLDEN/tiny-y-f32.gguf" -f "$OUT/prompts/$1" -t 2 --top 20 --gen 32 --pos0 "$2" \
        --kv-type f16 --fa auto >"$OUT/$base.kvf16.json"
done

# Compare: raw logits byte for byte; JSON text with the timings blanked.
without_timings() {
    sed -e 's/"seconds": [-0-9.e+]*/"seconds": _/' -e 's/"prompt_seconds": [-0-9.e+]*/"prompt_seconds": _/' "$1"
}
n_same=0
n_diff=0
for f in "$OUT"/*.json "$OUT"/*.f32; do
    name=$(basename "$f")
    committed="$GOLDEN/$name"
    if [ ! -f "$committed" ]; then
        echo "gen-golden: $name: new (no committed file)"
        n_diff=$((n_diff + 1))
        continue
    fi
    case "$name" in
        *.f32) cmp -s "$f" "$committed" && same=1 || same=0 ;;
        *) without_timings "$f" >"$OUT/.a"; without_timings "$committed" >"$OUT/.b"
           cmp -s "$OUT/.a" "$OUT/.b" && same=1 || same=0 ;;
    esac
    if [ $same -eq 1 ]; then
        n_same=$((n_same + 1))
    else
        n_diff=$((n_diff + 1))
        echo "gen-golden: $name DIFFERS from the committed file"
        case "$name" in *.json) diff "$OUT/.b" "$OUT/.a" | head -n 6 | sed 's/^/    /' | cut -c 1-200 ;; esac
    fi
done
rm -f "$OUT/.a" "$OUT/.b"
echo "gen-golden: $n_same files agree with tests/data/golden, $n_diff differ (regenerated in $OUT)"
if [ $update -eq 1 ]; then
    cp "$OUT"/*.json "$OUT"/*.f32 "$GOLDEN/"
    echo "gen-golden: copied the regenerated files into $GOLDEN"
fi
[ $n_diff -eq 0 ]
