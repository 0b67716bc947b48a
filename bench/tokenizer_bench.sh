#!/bin/sh
# tokenizer_bench.sh — encode throughput (MB/s, one thread) of inferno's
# tokenizer against Hugging Face tokenizers (npm `tokenizers`, its Rust core)
# on the same machine, the same tokenizer.json and the same texts: the
# tokenizer test corpus, (a) each text encoded on its own, (b) all texts
# joined by newlines as one input, (c) the same joined but without the 14
# synthetic 10,000+ character stress texts (ordinary text). A benchmark, not a
# test: nothing is asserted. Needs node and the npm oracles
# (sh scripts/install-oracles.sh).
#
#   sh bench/tokenizer_bench.sh [SECONDS_PER_MEASUREMENT]   (default 2)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${1:-2}
JSON=data/qwen3-tokenizer/tokenizer.json
CORPUS=tests/data/tokenizer/corpus.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make -s build/libinferno.a
mkdir -p build/bench
LIBS=$(sed -n 's/^LDLIBS *:= *//p' Makefile) # the libraries the library needs, as the Makefile links them
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude bench/tokenizer_bench.c build/libinferno.a $LIBS -o build/bench/tokenizer_bench
[ -d .deps/oracles/node_modules/tokenizers ] || sh scripts/install-oracles.sh >/dev/null

# (c): the corpus without its stress texts (lines of 5,000 bytes or more)
awk 'length($0) < 5000' "$CORPUS" > "$tmp/ordinary.jsonl"

run() { # NAME CORPUS
    build/bench/tokenizer_bench "$JSON" "$2" "$SECONDS_EACH" | sed "s/^/$1 /" >> "$tmp/results"
    TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 NODE_PATH=.deps/oracles/node_modules \
        node bench/tokenizer_bench.js "$JSON" "$2" "$SECONDS_EACH" | sed "s/^/$1 /" >> "$tmp/results"
}
: > "$tmp/results"
run corpus "$CORPUS"
run ordinary "$tmp/ordinary.jsonl"

echo "tokenizer encode throughput, one thread ($(uname -m), $(nproc) cores; HF: npm tokenizers $(node -p "require('$ROOT/.deps/oracles/node_modules/tokenizers/package.json').version"))"
printf '%-28s %12s %12s %8s\n' "measurement" "inferno" "HF" "ratio"
awk '
    { key = $1 " " $3; unit = $5; if ($2 == "inferno") ours[key] = $4; else hf[key] = $4; order[key] = NR }
    END {
        split("corpus load_ms|corpus per_text_MB_s|corpus joined_MB_s|ordinary per_text_MB_s|ordinary joined_MB_s", keys, "|")
        for (i = 1; i <= 5; i++) {
            k = keys[i]
            if (k ~ /load_ms/) printf "%-28s %9.1f ms %9.1f ms %7.2fx\n", k, ours[k], hf[k], hf[k] / ours[k]
            else printf "%-28s %7.2f MB/s %7.2f MB/s %7.2fx\n", k, ours[k], hf[k], ours[k] / hf[k]
        }
    }' "$tmp/results"
echo "(ratio: how many times faster inferno is; per_text = each text on its own, joined = one input)"
