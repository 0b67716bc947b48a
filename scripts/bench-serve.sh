#!/bin/sh
# bench-serve.sh — inferno serve against llama.cpp's llama-server under the
# same client load, alternately: same GGUF, same threads, as many parallel
# slots as concurrent streams, at each stream count. The load
# (scripts/bench-serve-client.mjs) is C clients each sending K streaming
# /v1/completions requests (distinct prompts of ~W words, greedy,
# ignore_eos, N tokens). Reports, per server and stream count, the median
# over the rounds of aggregate tok/s and of the p50/p99 time to first token
# and inter-token latency, and inferno's ratio. A benchmark, not a test.
#
#   sh scripts/bench-serve.sh [-m MODEL.gguf] [-t THREADS] [--streams 1,4,8,16]
#                             [-n TOKENS] [-k REQUESTS] [-w WORDS] [-r ROUNDS]
#
# Defaults: the synthetic Qwen3-0.6B-geometry Q8_0 model (written to
# ~/.cache/inferno/bench-q8_0.gguf on first use), 2 threads, streams
# 1,4,8,16, 64 tokens, 4 requests per client, 48 words, 3 rounds.
# llama-server comes from scripts/build-llama-server.sh (~15 minutes the
# first time, cached). Each server gets a context of 1024 tokens per slot
# (llama-server's -c is split among its slots; inferno's --kv-pool holds
# the same total). Results: bench/results/serve-DATE.jsonl, one line per
# run, and the summary on stdout.
set -eu
cd "$(dirname "$0")/.."
MODEL=""
THREADS=2
STREAMS="1,4,8,16"
TOKENS=64
REQUESTS=4
WORDS=48
ROUNDS=3
while [ $# -gt 0 ]; do
    case "$1" in
    -m) MODEL=$2; shift 2 ;;
    -t) THREADS=$2; shift 2 ;;
    --streams) STREAMS=$2; shift 2 ;;
    -n) TOKENS=$2; shift 2 ;;
    -k) REQUESTS=$2; shift 2 ;;
    -w) WORDS=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench-serve.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -x build/inferno ] || make -s -j"$(nproc)" >/dev/null
if [ -z "$MODEL" ]; then
    MODEL="${XDG_CACHE_HOME:-$HOME/.cache}/inferno/bench-q8_0.gguf"
    [ -f "$MODEL" ] || { mkdir -p "$(dirname "$MODEL")"; build/inferno synth -o "$MODEL" --type q8_0 >&2; }
fi
LLAMA_SERVER=$(sh scripts/build-llama-server.sh)
mkdir -p bench/results
OUT="bench/results/serve-$(date -u +%Y%m%d-%H%M%S).jsonl"
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
LOGDIR=$(mktemp -d)
trap 'kill $SERVER_PID 2>/dev/null || true; rm -rf "$LOGDIR"' EXIT INT TERM
SERVER_PID=""
PORT=18500

wait_ready() { # url seconds
    i=0
    while [ $i -lt $(($2 * 10)) ]; do
        if node -e "fetch('$1/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then return 0; fi
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

run_one() { # engine streams round
    engine=$1 n=$2 round=$3
    PORT=$((PORT + 1))
    ctx=$((n * 1024))
    if [ "$engine" = inferno ]; then
        build/inferno serve -m "$MODEL" -t "$THREADS" --parallel "$n" -c 1024 --kv-pool "$ctx" \
            --port "$PORT" --quiet 2>"$LOGDIR/server.log" &
    else
        "$LLAMA_SERVER" -m "$MODEL" -t "$THREADS" -tb "$THREADS" --parallel "$n" -c "$ctx" --host 127.0.0.1 \
            --port "$PORT" --no-webui -lv 0 >"$LOGDIR/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    if ! wait_ready "http://127.0.0.1:$PORT" 120; then
        echo "bench-serve.sh: $engine did not come up; its log:" >&2
        tail -n 20 "$LOGDIR/server.log" >&2
        exit 1
    fi
    # one short warm-up request, then the measured load
    node scripts/bench-serve-client.mjs --url "http://127.0.0.1:$PORT" --clients 1 --requests 1 --tokens 4 \
        --prompt-words 8 >/dev/null
    line=$(node scripts/bench-serve-client.mjs --url "http://127.0.0.1:$PORT" --clients "$n" --requests "$REQUESTS" \
        --tokens "$TOKENS" --prompt-words "$WORDS")
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    echo "{\"engine\":\"$engine\",\"streams\":$n,\"round\":$round,\"threads\":$THREADS,\"cpu\":\"$CPU\",\"model\":\"$MODEL\",\"result\":$line}" >>"$OUT"
    echo "$engine streams=$n round=$round $line" >&2
}

for round in $(seq 1 "$ROUNDS"); do
    for n in $(echo "$STREAMS" | tr ',' ' '); do
        # alternate which server goes first
        if [ $((round % 2)) -eq 1 ]; then
            run_one inferno "$n" "$round"
            run_one llama-server "$n" "$round"
        else
            run_one llama-server "$n" "$round"
            run_one inferno "$n" "$round"
        fi
    done
done

echo "CPU: $CPU, $THREADS threads, $(basename "$MODEL"), $TOKENS tokens x $REQUESTS requests per stream; medians of $ROUNDS rounds"
node -e '
const fs = require("fs");
const rows = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const med = (v) => { const s = v.filter((x) => x != null).sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : null; };
const keys = ["tok_s", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99"];
const streams = [...new Set(rows.map((r) => r.streams))];
console.log("streams  engine        tok/s    ttft p50   ttft p99   itl p50   itl p99   (ms)");
for (const n of streams) {
  const m = {};
  for (const e of ["inferno", "llama-server"]) {
    const rs = rows.filter((r) => r.streams === n && r.engine === e).map((r) => r.result);
    m[e] = Object.fromEntries(keys.map((k) => [k, med(rs.map((r) => r[k]))]));
    const v = m[e];
    console.log(`${String(n).padStart(7)}  ${e.padEnd(12)} ${String(v.tok_s).padStart(7)} ${String(v.ttft_ms_p50).padStart(10)} ${String(v.ttft_ms_p99).padStart(10)} ${String(v.itl_ms_p50).padStart(9)} ${String(v.itl_ms_p99).padStart(9)}`);
  }
  const r = m.inferno.tok_s / m["llama-server"].tok_s;
  console.log(`         ratio        ${r.toFixed(2)}x tok/s; ttft p50 ${(m.inferno.ttft_ms_p50 / m["llama-server"].ttft_ms_p50).toFixed(2)}x; inferno ttft p99/p50 ${(m.inferno.ttft_ms_p99 / m.inferno.ttft_ms_p50).toFixed(2)}`);
}
' "$OUT"
echo "rows: $OUT"
