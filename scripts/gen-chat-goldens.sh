#!/bin/sh
# Regenerates the chat-template goldens in tests/data/chat/ from the
# hand-written requests there (NAME.request.json):
#   NAME.expected.txt / NAME.error.txt  rendered by @huggingface/jinja
#                                       (scripts/oracles/render-chat.cjs)
#   oracle.txt                          the engine and node versions used
#   python-differences.txt              where Python's Jinja2, run as
#                                       transformers runs it, renders
#                                       otherwise (only when python3 has jinja2)
# Installs the npm oracles first when they are missing.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_MODULES="$ROOT/.deps/oracles/node_modules"
[ -d "$NODE_MODULES/@huggingface/jinja" ] || sh "$ROOT/scripts/install-oracles.sh" >/dev/null
NODE_PATH="$NODE_MODULES" node "$ROOT/scripts/oracles/render-chat.cjs" "$ROOT"
if python3 -c 'import jinja2' 2>/dev/null; then
    python3 "$ROOT/scripts/oracles/render-chat-python.py" "$ROOT"
else
    echo "python3 jinja2 not found: python-differences.txt left as it is"
fi
