#!/bin/sh
# Shows that llama.cpp loads what `inferno convert` writes and computes the
# logits inferno computes. A synthetic Hugging Face checkpoint directory in
# the Qwen3-0.6B geometry with 2 layers (scripts/synth-hf.sh: BF16 matrices,
# f32 norms, the full 151936-row vocabulary, random weights, seed 1) is
# converted as stored (BF16), to F32 and to Q8_0; on each GGUF, llama.cpp's
# harness (scripts/install-llama.sh: .deps/llama/llama_bench, llama.cpp's
# prebuilt CPU build) and `inferno logits` run the golden prompt p1 with an
# f32 KV cache (flash attention off on llama.cpp's side, its most exact
# setting), and the final logits are compared with tests/test_golden.c's
# budgets:
#   f32         max |logit diff| over all final logits <= 1e-4 (the exact case)
#   bf16, q8_0  <= 1.5 x llama.cpp's own spread between its f32-KV and
#               f16-KV (flash attention auto) runs of the same file: both
#               engines round activations to the weight's dot type, and a
#               last-bit difference upstream can flip one rounding; 2 x for
#               BF16 on the AMX tiles, which round their dot products their
#               own way (test_golden.c says more)
# and on every file: the same prompt token ids, the same top-20 ids (an id
# counts as missing only when it beats the other's 20th logit by more than
# the budget). Also: `-m DIR` gives the converted BF16 file's logits bit
# for bit (the directory loader and convert agree), and the Q8_0 file split
# by build/gguf_split into 3 shards (llama.cpp's gguf-split layout) loads
# in llama.cpp and in inferno, each giving its unsplit logits bit for bit.
#
# Not in `make check` (CI has no llama.cpp); ~30 s on 2 cores and ~2 GB of disk
# in .deps/check-convert (git-ignored, removed at the end unless KEEP=1).
#
#   sh scripts/check-convert-llama.sh          exit 0 when every file is within budget
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/.deps/check-convert"
case "${1:-}" in -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
LLAMA=$(sh "$ROOT/scripts/install-llama.sh")
INFERNO="$ROOT/build/inferno"
(cd "$ROOT" && make -j2 build/inferno build/gguf_split >/dev/null)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$OUT"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
prompt='The quick brown fox jumps over the lazy dog.'
printf '%s' "$prompt" >"$OUT/p1"

sh "$ROOT/scripts/synth-hf.sh" 0.6b "$OUT/hf" --layers 2 --name check-convert >/dev/null 2>&1
"$INFERNO" logits -m "$OUT/hf" -p "$prompt" -t 2 --top 20 --kv-type f32 --dump "$OUT/dir.inferno.f32" \
    >"$OUT/dir.inferno.json"
fail=0
for type in bf16 f32 q8_0; do
    gguf="$OUT/convert-$type.gguf"
    if [ "$type" = bf16 ]; then # the default: matrices as stored
        "$INFERNO" convert "$OUT/hf" -o "$gguf" >/dev/null
    else
        "$INFERNO" convert "$OUT/hf" -o "$gguf" --type "$type" >/dev/null
    fi
    "$LLAMA" logits -m "$gguf" -f "$OUT/p1" -t 2 --top 20 --kv-type f32 --fa off --dump "$OUT/$type.llama.f32" \
        >"$OUT/$type.llama.json" 2>"$OUT/$type.llama.log" || { echo "check-convert-llama: $type: llama.cpp failed:"; tail -n 5 "$OUT/$type.llama.log"; fail=1; continue; }
    "$LLAMA" logits -m "$gguf" -f "$OUT/p1" -t 2 --top 20 --kv-type f16 --fa auto \
        >"$OUT/$type.llama16.json" 2>/dev/null
    "$INFERNO" logits -m "$gguf" -p "$prompt" -t 2 --top 20 --kv-type f32 --dump "$OUT/$type.inferno.f32" \
        >"$OUT/$type.inferno.json"
    isa=$("$INFERNO" info -m "$gguf" | sed -n 's/^cpu path  *\([^,]*\),.*/\1/p')
    line=$(python3 - "$type" "$OUT" "$isa" <<'PY'
import json, struct, sys
kind, out, isa = sys.argv[1], sys.argv[2], sys.argv[3]
def floats(p):
    b = open(p, 'rb').read()
    return struct.unpack('<%df' % (len(b) // 4), b)
def top(p):
    return {e['id']: e['logit'] for e in json.load(open(p))['final']['top']}
llama, llama16 = json.load(open('%s/%s.llama.json' % (out, kind))), json.load(open('%s/%s.llama16.json' % (out, kind)))
ours = json.load(open('%s/%s.inferno.json' % (out, kind)))
a, b = floats('%s/%s.llama.f32' % (out, kind)), floats('%s/%s.inferno.f32' % (out, kind))
t32, t16 = top('%s/%s.llama.json' % (out, kind)), top('%s/%s.llama16.json' % (out, kind))
spread = max(abs(t32[i] - t16[i]) for i in t32 if i in t16)
factor = 2 if kind == 'bf16' and isa == 'avx512+amx' else 1.5
tol = 1e-4 if kind == 'f32' else factor * spread
d = max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) else float('inf')
def missing(mine, theirs):  # ids of mine above theirs' 20th logit by more than tol, absent from theirs
    kth = min(theirs.values())
    return [i for i, v in mine.items() if v > kth + tol and i not in theirs]
tl, ti = top('%s/%s.llama.json' % (out, kind)), top('%s/%s.inferno.json' % (out, kind))
ids_ok = not missing(ti, tl) and not missing(tl, ti)
same_prompt = [t['id'] if isinstance(t, dict) else t for t in llama['prompt_tokens']] == \
              [t['id'] if isinstance(t, dict) else t for t in ours['prompt_tokens']]
ok = d <= tol and ids_ok and same_prompt
print('%s max|diff| %.3g over %d logits (budget %.3g%s), top-20 ids %s, prompt ids %s; inferno on %s' % (
    'ok  ' if ok else 'FAIL', d, len(a), tol,
    '' if kind == 'f32' else ' = %g x llama.cpp\'s spread %.3g' % (factor, spread),
    'agree' if ids_ok else 'differ', 'equal' if same_prompt else 'differ', isa))
PY
)
    echo "check-convert-llama: $type: $line"
    case "$line" in FAIL*) fail=1 ;; esac
done
if cmp -s "$OUT/dir.inferno.f32" "$OUT/bf16.inferno.f32"; then
    echo "check-convert-llama: -m DIR: ok   the converted BF16 file's logits, bit for bit"
else
    echo "check-convert-llama: -m DIR: FAIL its logits differ from the converted BF16 file's"
    fail=1
fi
mkdir "$OUT/split"
"$ROOT/build/gguf_split" --split-max-tensors 10 "$OUT/convert-q8_0.gguf" "$OUT/split/q8_0" >/dev/null
shard="$OUT/split/q8_0-00001-of-00003.gguf"
"$LLAMA" logits -m "$shard" -f "$OUT/p1" -t 2 --top 20 --kv-type f32 --fa off --dump "$OUT/split.llama.f32" \
    >/dev/null 2>"$OUT/split.llama.log" || tail -n 5 "$OUT/split.llama.log"
"$INFERNO" logits -m "$shard" -p "$prompt" -t 2 --top 20 --kv-type f32 --dump "$OUT/split.inferno.f32" >/dev/null
if cmp -s "$OUT/split.llama.f32" "$OUT/q8_0.llama.f32" && cmp -s "$OUT/split.inferno.f32" "$OUT/q8_0.inferno.f32"; then
    echo "check-convert-llama: split: ok   3 shards of the Q8_0 file: llama.cpp's and inferno's unsplit logits, bit for bit"
else
    echo "check-convert-llama: split: FAIL the Q8_0 file in 3 shards gives other logits (or llama.cpp did not load it)"
    fail=1
fi
exit $fail
