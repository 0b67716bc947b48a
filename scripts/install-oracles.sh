#!/bin/sh
# Installs the npm packages used as test oracles (Hugging Face tokenizers,
# @huggingface/jinja) into .deps/oracles (git-ignored). Only the scripts that
# regenerate golden files need them; the test suite reads committed goldens.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.deps/oracles"
mkdir -p "$DEST"
cp "$ROOT/scripts/oracles/package.json" "$DEST/package.json"
cd "$DEST"
npm install --silent --no-audit --no-fund >/dev/null
echo "$DEST/node_modules"
