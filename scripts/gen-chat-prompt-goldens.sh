#!/bin/sh
# Regenerates tests/data/chat-prompt/ids.jsonl and NAME.expected.txt there:
# the token ids inf_chat_template_render_ids must give for every request of
# tests/data/chat/ and tests/data/chat-prompt/, from @huggingface/jinja and
# HF tokenizers (scripts/oracles/chat-prompt-ids.cjs says how).
# Installs the npm oracles first when they are missing.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_MODULES="$ROOT/.deps/oracles/node_modules"
[ -d "$NODE_MODULES/@huggingface/jinja" ] && [ -d "$NODE_MODULES/tokenizers" ] ||
    sh "$ROOT/scripts/install-oracles.sh" >/dev/null
NODE_PATH="$NODE_MODULES" node "$ROOT/scripts/oracles/chat-prompt-ids.cjs" "$ROOT"
