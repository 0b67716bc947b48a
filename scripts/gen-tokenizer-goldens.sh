#!/bin/sh
# Regenerates the tokenizer test data in tests/data/tokenizer/: the corpus
# (scripts/gen-tokenizer-corpus.py) and the ids/decodings Hugging Face
# tokenizers produces for it (scripts/tokenizer-goldens.js, npm `tokenizers`
# on data/qwen3-tokenizer/tokenizer.json). Needs python3, node and the npm
# oracles (installed here by scripts/install-oracles.sh when missing).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ -d .deps/oracles/node_modules/tokenizers ] || sh scripts/install-oracles.sh >/dev/null
mkdir -p tests/data/tokenizer
python3 scripts/gen-tokenizer-corpus.py > tests/data/tokenizer/corpus.jsonl
NODE_PATH="$ROOT/.deps/oracles/node_modules" node scripts/tokenizer-goldens.js
