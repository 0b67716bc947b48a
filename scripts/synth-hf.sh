#!/bin/sh
# Writes a synthetic Qwen3 checkpoint as a Hugging Face directory
# (config.json, model.safetensors, tokenizer files) in a released model's
# shapes, for benchmarking the directory loader at full size:
#
#   sh scripts/synth-hf.sh GEOMETRY OUT_DIR [synth flags...]
#   sh scripts/synth-hf.sh 4b /data/Qwen3-4B-synth          # BF16, 36 layers, ~8.0 GB
#   sh scripts/synth-hf.sh 0.6b /tmp/q06 --layers 2          # a small one
#
# inferno synth --geometry GEOMETRY --type bf16 writes the GGUF (random
# weights, norms f32, seed 1 unless given), build/gguf_to_hf streams its
# tensors unchanged into model.safetensors under the Hugging Face names, and
# the GGUF is deleted. The directory then loads as the GGUF did (same
# logits: inferno logits -m OUT_DIR vs -m the GGUF). Needs about twice the
# checkpoint's size of free disk while it runs.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
geometry=$1 dir=$2
shift 2
(cd "$ROOT" && make -j2 build/inferno build/gguf_to_hf >/dev/null)
mkdir -p "$dir"
gguf="$dir.synth.gguf"
"$ROOT/build/inferno" synth -o "$gguf" --geometry "$geometry" --type bf16 "$@"
"$ROOT/build/gguf_to_hf" "$gguf" "$dir" "$ROOT/data/qwen3-tokenizer"
rm -f "$gguf"
