#!/bin/sh
# Checks every released Qwen3 dense geometry (inferno synth --geometry:
# 0.6b 1.7b 4b 8b 14b 32b, the shapes of their config.json) against
# llama.cpp: a synthetic model of each with one layer, Q8_0 matrices and
# the full 151936-row vocabulary (token_embd, and output.weight for the
# untied 8b/14b/32b), the prompt p1 of tests/data/golden, llama.cpp's
# most exact setting (f32 KV cache, flash attention off) on both sides.
# Prints the max |logit diff| over all final logits and whether the top-20
# ids agree, per geometry; exit status 0 when every one is within TOL.
#
# Not part of `make check`: the files are 0.19 GB (0.6b) to 2.2 GB (32b)
# and take ~4 to ~60 s each to write on 2 cores, beyond the test suite's
# budget. The models go to .deps/geometry (git-ignored) and are reused.
#
#   sh scripts/check-geometries.sh [GEOMETRY...]     default: all six
#   sh scripts/check-geometries.sh --update [G...]   also write llama.cpp's
#        top-20 logits as tests/data/golden/geom-G.p1.json (what was
#        measured; regenerate them here, they are not read by a test)
#   TOL=0.05 (default): Q8_0 activations are int8-rounded as llama.cpp
#        rounds them; a last-bit difference in a sum can flip one rounding
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/.deps/geometry"
TOL=${TOL:-0.05}
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
case "${1:-}" in -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
geometries=${*:-"0.6b 1.7b 4b 8b 14b 32b"}
LLAMA=$(sh "$ROOT/scripts/install-llama.sh")
INFERNO="$ROOT/build/inferno"
[ -x "$INFERNO" ] || (cd "$ROOT" && make -j2 build/inferno >/dev/null)
mkdir -p "$OUT"
prompt='The quick brown fox jumps over the lazy dog.'
printf '%s' "$prompt" >"$OUT/p1"
fail=0
for g in $geometries; do
    model="$OUT/geom-$g-q8_0.gguf"
    [ -f "$model" ] || "$INFERNO" synth -o "$model" --geometry "$g" --layers 1 --type q8_0 --seed 21 \
        --name "geom-$g" 2>/dev/null
    "$LLAMA" logits -m "$model" -f "$OUT/p1" -t 2 --top 20 --gen 8 --kv-type f32 --fa off --all-pos \
        --dump "$OUT/$g.llama.f32" >"$OUT/geom-$g.p1.json" 2>/dev/null
    "$INFERNO" logits -m "$model" -p "$prompt" -t 2 --top 20 --kv-type f32 --dump "$OUT/$g.inferno.f32" \
        >"$OUT/$g.inferno.json"
    line=$(python3 - "$OUT/$g.llama.f32" "$OUT/$g.inferno.f32" "$OUT/geom-$g.p1.json" "$OUT/$g.inferno.json" "$TOL" <<'PY'
import json, struct, sys
def floats(p):
    b = open(p, 'rb').read()
    return struct.unpack('<%df' % (len(b) // 4), b)
a, b = floats(sys.argv[1]), floats(sys.argv[2])
want = [e['id'] for e in json.load(open(sys.argv[3]))['final']['top']]
got = [e['id'] for e in json.load(open(sys.argv[4]))['final']['top']]
d = max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) else float('inf')
ok = d <= float(sys.argv[5]) and want[:5] == got[:5]
print('%s max|diff| %.3g over %d logits, top-20 ids %s' % ('ok  ' if ok else 'FAIL', d, len(a),
      'equal' if want == got else 'differ (first 5 %s)' % ('equal' if want[:5] == got[:5] else 'differ')))
PY
)
    echo "check-geometries: $g: $line"
    case "$line" in FAIL*) fail=1 ;; esac
    if [ $update -eq 1 ]; then cp "$OUT/geom-$g.p1.json" "$ROOT/tests/data/golden/"; fi
done
exit $fail
