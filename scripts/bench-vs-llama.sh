#!/bin/sh
# Measures inferno against llama.cpp on the same GGUF, the same threads and
# the same cases, weights in anonymous memory on both sides, the two engines
# run alternately (round 1 inferno first, round 2 llama.cpp first, ...), and
# prints per case the median over the rounds of each engine's tok/s, their
# ratio, the median (min-max) of the per-round ratios (each inferno run
# against the llama.cpp run next to it), inferno's GB/s and % of the
# read bandwidth measured just before and after each decode case (inferno
# bench: the higher of the two; the median and range over the rounds), and
# the issues' targets for those figures (issue 4: Q8_0 and BF16; issue 12:
# Q4_K_M and Q4_0, decode of Q6_K, Q5_K_M and IQ4_XS; judged on the paired
# ratio and the median % bw).
#
#   sh scripts/bench-vs-llama.sh [-m MODEL]... [-t 2,1] [-r 3] [--reps 3]
#        [-p 511,2044] [-n 64] [-d 17,511,2044] [--types q8_0,bf16]
#        [--kv-type f16|f32|q8_0] [--mmap]
#        [--parallel 1,2,4,8,16 [--par-steps 32] [--par-depth 64] [--parallel-only]]
#
#   -m MODEL     a GGUF to measure (repeatable); default: synthetic models with
#                the Qwen3-0.6B geometry, one per --types entry, written once
#                by `inferno synth` into .deps/models (git-ignored)
#   -t LIST      thread counts (default 2,1)
#   -r ROUNDS    alternating rounds (default 3)
#   --reps N     repetitions inside each bench run (default 3); a round's
#                figure is that run's median
#   -p -n -d     the cases (default: prefill 511 and 2044, decode 64 after 17,
#                511 and 2044 tokens)
#   --kv-type    KV cache type on both sides: f16 (default, llama.cpp's
#                default), f32 or q8_0 (both sides then rotate q, k and v
#                around the quantized cache, llama.cpp's default)
#   --mmap       map the file on both sides instead (erratic on some VMs)
#   --poll N     llama.cpp's thread pool busy-wait level (default 50, as
#                llama-bench); spinning suffers when other processes load the
#                cores: each run records the 1-minute load average before it
#   --parallel LIST  also measure batched decode (off by default): for each
#                N in LIST (1 is added if missing), N sequences of --par-depth
#                prompt tokens (not timed) then --par-steps steps that decode
#                one token of every sequence together: `inferno bench
#                --parallel N -n STEPS -d DEPTH --json` against `llama_bench
#                parallel` (one llama_batch of N sequences, unified KV cache,
#                as llama-server batches), alternately per N for -r rounds;
#                the table gives each engine's aggregate tok/s (median over
#                rounds of the "kind": "parallel" rows), the ratio and
#                inferno's scaling (its tok/s at N over its tok/s at 1), with
#                the targets for q8_0 on 2 threads: inferno >= 2x llama.cpp at
#                8 and 16 streams, inferno at 8 streams >= 4x its own 1 stream.
#                Stops with an error if inferno's bench rejects --parallel.
#   --par-steps N    decode steps per sequence (default 32)
#   --par-depth D    prompt tokens per sequence (default 64)
#   --parallel-only  skip the prefill and decode cases, run only --parallel
#   --table FILE print the table of an earlier results file (and rewrite its
#                derived comparison rows) without running anything
# Every bench line (tagged with its round) and the comparison rows go to
# bench/results/vs-llama-DATE.jsonl. Needs build/inferno (made if missing),
# npm (llama.cpp via scripts/install-llama.sh) and node (the table).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

models=""
threads=2,1
rounds=3
reps=3
prefill=511,2044
n_decode=64
depths=17,511,2044
types=q8_0,bf16
kv=f16
mmap=0
poll=50
table_file=""
par_list=""
par_steps=32
par_depth=64
par_only=0
usage() { sed -n '2,55p' "$0" | sed 's/^# \{0,1\}//'; }
need_value() { [ $# -ge 2 ] || { echo "bench-vs-llama: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        -m) need_value "$@"; models="$models $2"; shift 2 ;;
        -t) need_value "$@"; threads=$2; shift 2 ;;
        -r) need_value "$@"; rounds=$2; shift 2 ;;
        --reps) need_value "$@"; reps=$2; shift 2 ;;
        -p) need_value "$@"; prefill=$2; shift 2 ;;
        -n) need_value "$@"; n_decode=$2; shift 2 ;;
        -d) need_value "$@"; depths=$2; shift 2 ;;
        --types) need_value "$@"; types=$2; shift 2 ;;
        --kv-type) need_value "$@"; kv=$2; shift 2 ;;
        --mmap) mmap=1; shift ;;
        --poll) need_value "$@"; poll=$2; shift 2 ;;
        --table) need_value "$@"; table_file=$2; shift 2 ;;
        --parallel) need_value "$@"; par_list=$2; shift 2 ;;
        --par-steps) need_value "$@"; par_steps=$2; shift 2 ;;
        --par-depth) need_value "$@"; par_depth=$2; shift 2 ;;
        --parallel-only) par_only=1; shift ;;
        *) echo "bench-vs-llama: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench-vs-llama: -r wants a round count from 1" >&2; exit 2 ;; esac
case "$kv" in f16|f32|q8_0) ;; *) echo "bench-vs-llama: --kv-type wants f16, f32 or q8_0" >&2; exit 2 ;; esac
if [ -n "$par_list" ]; then
    case "$par_list" in *[!0-9,]*|,*|*,|*,,*) echo "bench-vs-llama: --parallel wants stream counts like 1,4,8,16" >&2; exit 2 ;; esac
    for n in $(echo "$par_list" | tr , ' '); do
        [ "$n" -ge 1 ] && [ "$n" -le 256 ] || { echo "bench-vs-llama: --parallel: stream counts from 1 to 256, got $n" >&2; exit 2; }
    done
    # the scaling column divides by inferno's single stream
    case ",$par_list," in *,1,*) ;; *) par_list=1,$par_list ;; esac
fi
case "$par_steps" in ''|*[!0-9]*|0) echo "bench-vs-llama: --par-steps wants a step count from 1" >&2; exit 2 ;; esac
case "$par_depth" in ''|*[!0-9]*) echo "bench-vs-llama: --par-depth wants a token count" >&2; exit 2 ;; esac
[ $par_only -eq 0 ] || [ -n "$par_list" ] || { echo "bench-vs-llama: --parallel-only needs --parallel LIST" >&2; exit 2; }
command -v node >/dev/null || { echo "bench-vs-llama: node is needed for the table" >&2; exit 1; }

# table FILE: prints the comparison table from FILE's bench lines and
# (re)writes its derived comparison rows
table() {
node - "$1" <<'EOF'
// The table: per model, threads and case, the median over rounds of each
// engine's per-run median tok/s; the ratio; inferno's GB/s and % of the
// measured bandwidth (median and range over the rounds); the issues'
// targets (4: Q8_0, BF16; 12: the 4-bit and other block types; 13:
// prefill when inferno ran on avx512+amx); then batched decode
// (--parallel). The comparison rows replace any earlier ones at the end of
// the results file.
const fs = require("fs");
const file = process.argv[2];
const raw = fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
const derived = (l) => /"kind": ?"comparison/.test(l);
const lines = raw.filter((l) => !derived(l)).map((l) => JSON.parse(l));
const median = (v) => {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const groups = new Map();
for (const l of lines) {
  // batched decode has its own table below (its runs' other lines are not the cases')
  if (!l.engine || l.kind === "parallel" || l.section === "parallel") continue;
  const key = [l.file, l.threads, l.kind, l.tokens, l.depth].join("|");
  if (!groups.has(key)) groups.set(key, { file: l.file, threads: l.threads, kind: l.kind, tokens: l.tokens, depth: l.depth, inferno: [], llama: [] });
  groups.get(key)[l.engine === "inferno" ? "inferno" : "llama"].push(l);
}
const pick = (runs, field) => median(runs.map((r) => r[field]).filter((x) => typeof x === "number"));
const rows = [];
for (const g of groups.values()) {
  if (g.kind === "summary") continue;
  const type = (g.inferno[0] || {}).weight_type || "?";
  const ours = pick(g.inferno, "tok_s_median"), theirs = pick(g.llama, "tok_s_median");
  // each round's inferno run against the llama.cpp run next to it: the
  // VM's bandwidth drifts over minutes, less between neighbouring runs
  const paired = g.inferno.map((r) => [r, g.llama.find((l) => l.round === r.round)])
    .filter(([r, l]) => l && r.tok_s_median > 0 && l.tok_s_median > 0).map(([r, l]) => r.tok_s_median / l.tok_s_median);
  let target = null;
  const amx = (g.inferno[0] || {}).isa === "avx512+amx";
  if (amx && g.threads === 2 && g.kind === "prefill" && (type === "q8_0" || type === "bf16"))
    target = { ratio: type === "q8_0" ? 3.0 : 2.0 }; // issue 13: prefill on AMX tiles
  else if (g.threads === 1) target = { ratio: 1.0 };
  else if (g.threads === 2 && type === "q8_0") target = g.kind === "prefill" ? { ratio: 1.5 } : g.depth === 17 ? { ratio: 2.0, bw_pct: 75 } : null;
  else if (g.threads === 2 && type === "bf16") target = { ratio: g.kind === "prefill" ? 1.1 : 1.5 };
  // issue 12: Q4_K_M (its weight type reads q4_k) and Q4_0; Q6_K, Q5_K_M, IQ4_XS decode
  else if (g.threads === 2 && (type === "q4_k" || type === "q4_0"))
    target = g.kind === "prefill" ? { ratio: 1.5 } : g.depth === 17 ? { ratio: 1.2, bw_pct: 90 } : null;
  else if (g.threads === 2 && g.kind === "decode" && ["q6_k", "q5_k", "iq4_xs"].includes(type)) target = { ratio: 1.0 };
  const bw = g.inferno.map((r) => r.bw_pct).filter((x) => typeof x === "number");
  rows.push({
    kind: "comparison", file: g.file, weight_type: type, threads: g.threads, case: g.kind, tokens: g.tokens, depth: g.depth,
    rounds: Math.min(g.inferno.length, g.llama.length),
    inferno_tok_s: ours, llama_tok_s: theirs, ratio: ours / theirs,
    paired_ratio_median: median(paired), paired_ratio_min: Math.min(...paired), paired_ratio_max: Math.max(...paired),
    inferno_ttft_ms: g.kind === "prefill" ? pick(g.inferno, "ttft_ms_median") : null,
    gb_s: g.kind === "decode" ? pick(g.inferno, "gb_s") : null,
    bw_pct: g.kind === "decode" ? pick(g.inferno, "bw_pct") : null,
    bw_pct_min: g.kind === "decode" && bw.length ? Math.min(...bw) : null,
    bw_pct_max: g.kind === "decode" && bw.length ? Math.max(...bw) : null,
    target_ratio: target ? target.ratio : null, target_bw_pct: target && target.bw_pct ? target.bw_pct : null,
  });
}
const f = (x, d) => (typeof x === "number" && isFinite(x) ? x.toFixed(d) : "-");
const caseName = (r) => (r.case === "prefill" ? `pp${r.tokens}` : `tg${r.tokens}@d${r.depth}`);
if (rows.length) console.log(`\n${"model".padEnd(30)} ${"thr".padStart(3)} ${"case".padEnd(12)} ${"inferno".padStart(9)} ${"llama.cpp".padStart(9)} ${"ratio".padStart(6)} ${"paired (min-max)".padStart(17)} ${"GB/s".padStart(6)} ${"% bw (min-max)".padStart(16)}  target`);
for (const r of rows) {
  let target = "", verdict = "";
  if (r.target_ratio) {
    target = `>=${r.target_ratio.toFixed(1)}x` + (r.target_bw_pct ? ` >=${r.target_bw_pct}%bw` : "");
    // judged on the paired ratio where the rounds pair up (bandwidth drift)
    const ratio = Number.isFinite(r.paired_ratio_median) ? r.paired_ratio_median : r.ratio;
    const ok = ratio >= r.target_ratio && (!r.target_bw_pct || r.bw_pct >= r.target_bw_pct);
    verdict = ok ? " ok" : " below";
  }
  const name = r.file.split("/").pop().replace(/\.gguf$/, "");
  console.log(`${name.padEnd(30)} ${String(r.threads).padStart(3)} ${caseName(r).padEnd(12)} ${f(r.inferno_tok_s, 2).padStart(9)} ${f(r.llama_tok_s, 2).padStart(9)} ${f(r.ratio, 2).padStart(6)} ${`${f(r.paired_ratio_median, 2)} (${f(r.paired_ratio_min, 2)}-${f(r.paired_ratio_max, 2)})`.padStart(17)} ${f(r.gb_s, 1).padStart(6)} ${(r.bw_pct_min === null ? f(r.bw_pct, 1) : `${f(r.bw_pct, 1)} (${f(r.bw_pct_min, 0)}-${f(r.bw_pct_max, 0)})`).padStart(16)}  ${target}${verdict}`);
}
// decode at depth against decode after 17 tokens (target: >= 85% for q8_0, 2 threads)
for (const r of rows) {
  if (r.case !== "decode" || r.depth === 17) continue;
  const base = rows.find((b) => b.file === r.file && b.threads === r.threads && b.case === "decode" && b.depth === 17);
  if (base) console.log(`${r.file.split("/").pop()} -t ${r.threads}: inferno tg${r.tokens}@d${r.depth} is ${f((100 * r.inferno_tok_s) / base.inferno_tok_s, 1)}% of tg${base.tokens}@d17` + (r.weight_type === "q8_0" && r.threads === 2 && r.depth === 2044 ? " (target >= 85%)" : ""));
}
// load time and peak RSS against weights + KV cache (targets: <= 0.5 s, <= 1.1x)
for (const g of groups.values()) {
  if (g.kind !== "summary") continue;
  const s = g.inferno;
  if (!s.length) continue;
  const rss = pick(s, "peak_rss_mb"), need = (s[0].weight_bytes + s[0].kv_cache_bytes) / 1e6;
  const line = { kind: "comparison_summary", file: g.file, threads: g.threads, inferno_load_s: pick(s, "load_s"), llama_load_s: pick(g.llama, "load_s"),
    inferno_peak_rss_mb: rss, llama_peak_rss_mb: pick(g.llama, "peak_rss_mb"), weights_plus_kv_mb: need, rss_ratio: rss / need, bandwidth_gb_s: pick(s, "bandwidth_gb_s") };
  rows.push(line);
  console.log(`${g.file.split("/").pop()} -t ${g.threads}: load ${f(line.inferno_load_s, 3)} s (llama.cpp ${f(line.llama_load_s, 3)} s, target <= 0.5), peak RSS ${f(rss, 0)} MB = ${f(line.rss_ratio, 2)}x weights+KV (target <= 1.1; llama.cpp ${f(line.llama_peak_rss_mb, 0)} MB), read bandwidth ${f(line.bandwidth_gb_s, 1)} GB/s`);
}
// batched decode: per model, threads, streams, steps and depth, the median
// over rounds of each engine's aggregate tok/s; the ratio (and the per-round
// paired ratios); inferno's tok/s at N over its tok/s at 1 stream
const par = new Map();
for (const l of lines) {
  if (!l.engine || l.kind !== "parallel") continue;
  const key = [l.file, l.threads, l.tokens, l.depth, l.streams].join("|");
  if (!par.has(key)) par.set(key, { file: l.file, threads: l.threads, tokens: l.tokens, depth: l.depth, streams: l.streams, inferno: [], llama: [] });
  par.get(key)[l.engine === "inferno" ? "inferno" : "llama"].push(l);
}
const parRows = [];
for (const g of par.values()) {
  // inferno's row may not name its weight type: then llama.cpp's description ("qwen3 0.6B Q8_0")
  const desc = ((g.llama[0] || {}).desc || "").split(" ").pop().toLowerCase();
  const type = (g.inferno[0] || {}).weight_type || desc || "?";
  const paired = g.inferno.map((r) => [r, g.llama.find((l) => l.round === r.round)])
    .filter(([r, l]) => l && r.tok_s_median > 0 && l.tok_s_median > 0).map(([r, l]) => r.tok_s_median / l.tok_s_median);
  const ours = pick(g.inferno, "tok_s_median"), theirs = pick(g.llama, "tok_s_median");
  parRows.push({
    kind: "comparison_parallel", file: g.file, weight_type: type, threads: g.threads, streams: g.streams, tokens: g.tokens, depth: g.depth,
    rounds: Math.min(g.inferno.length, g.llama.length), inferno_tok_s: ours, llama_tok_s: theirs, ratio: ours / theirs,
    paired_ratio_median: median(paired), paired_ratio_min: paired.length ? Math.min(...paired) : null, paired_ratio_max: paired.length ? Math.max(...paired) : null,
    inferno_scaling: null, llama_scaling: null, target_ratio: null, target_scaling: null,
  });
}
for (const r of parRows) {
  const one = parRows.find((b) => b.file === r.file && b.threads === r.threads && b.tokens === r.tokens && b.depth === r.depth && b.streams === 1);
  if (one) { r.inferno_scaling = r.inferno_tok_s / one.inferno_tok_s; r.llama_scaling = r.llama_tok_s / one.llama_tok_s; }
  if (r.weight_type === "q8_0" && r.threads === 2) {
    if (r.streams === 8 || r.streams === 16) r.target_ratio = 2.0;
    if (r.streams === 8) r.target_scaling = 4.0;
  }
}
parRows.sort((a, b) => a.file.localeCompare(b.file) || b.threads - a.threads || a.depth - b.depth || a.tokens - b.tokens || a.streams - b.streams);
const fx = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : "-");
if (parRows.length) {
  console.log(`\nbatched decode: aggregate tok/s of N sequences decoded together (one token of each per step)`);
  console.log(`${"model".padEnd(30)} ${"thr".padStart(3)} ${"case".padEnd(14)} ${"inferno".padStart(9)} ${"llama.cpp".padStart(9)} ${"ratio".padStart(6)} ${"paired (min-max)".padStart(17)} ${"scaling".padStart(8)} ${"llama sc.".padStart(9)}  targets`);
  for (const r of parRows) {
    const verdicts = [];
    const ratio = Number.isFinite(r.paired_ratio_median) ? r.paired_ratio_median : r.ratio; // paired where the rounds pair up
    if (r.target_ratio) verdicts.push(`>=${r.target_ratio.toFixed(1)}x llama.cpp ${ratio >= r.target_ratio ? "PASS" : "MISS"}`);
    if (r.target_scaling) verdicts.push(`>=${r.target_scaling.toFixed(1)}x own 1-stream ${r.inferno_scaling >= r.target_scaling ? "PASS" : "MISS"}`);
    const name = r.file.split("/").pop().replace(/\.gguf$/, "");
    console.log(`${name.padEnd(30)} ${String(r.threads).padStart(3)} ${`np${r.streams} tg${r.tokens}@d${r.depth}`.padEnd(14)} ${f(r.inferno_tok_s, 2).padStart(9)} ${f(r.llama_tok_s, 2).padStart(9)} ${f(r.ratio, 2).padStart(6)} ${`${f(r.paired_ratio_median, 2)} (${f(r.paired_ratio_min, 2)}-${f(r.paired_ratio_max, 2)})`.padStart(17)} ${fx(r.inferno_scaling).padStart(8)} ${fx(r.llama_scaling).padStart(9)}  ${verdicts.join(", ")}`);
  }
  rows.push(...parRows);
}
// a busy machine: another process's load (beyond our own previous run's
// threads, which linger in the 1-minute average) takes cores from the engines
const meta = lines.find((l) => l.kind === "meta") || {};
const maxLoad = Math.max(...lines.map((l) => (typeof l.loadavg1_before === "number" ? l.loadavg1_before : 0)));
const cores = meta.cores_online || 0;
if (cores && maxLoad > cores + 1) {
  rows.push({ kind: "comparison_warning", max_loadavg1: maxLoad, cores_online: cores, note: "the machine was busy with other processes during these runs: the figures (llama.cpp's busy-waiting thread pool most of all) are not representative" });
  console.log(`WARNING: the 1-minute load average reached ${maxLoad} on ${cores} cores before a run: other processes were running, so these figures are not representative.`);
}
fs.writeFileSync(file, raw.filter((l) => !derived(l)).concat(rows.map((r) => JSON.stringify(r))).join("\n") + "\n");
EOF
}

if [ -n "$table_file" ]; then
    table "$table_file"
    exit 0
fi

[ -x build/inferno ] || make -j2 >/dev/null
# batched decode needs inferno's `bench --parallel`: ask before any run (the
# option is parsed, or rejected, before --help answers)
if [ -n "$par_list" ] && ! build/inferno bench --parallel 1 --help >/dev/null 2>&1; then
    echo "bench-vs-llama: build/inferno's bench rejects --parallel (this build has no batched decode):" >&2
    build/inferno bench --parallel 1 --help 2>&1 >/dev/null | sed 's/^/    /' >&2
    echo "bench-vs-llama: rebuild from a revision with 'inferno bench --parallel N', or run without --parallel" >&2
    exit 1
fi
LLAMA=$(sh scripts/install-llama.sh)

if [ -z "$models" ]; then
    mkdir -p .deps/models
    for type in $(echo "$types" | tr , ' '); do
        file=.deps/models/qwen3-0.6b-synth-$type.gguf
        if [ ! -f "$file" ]; then
            echo "bench-vs-llama: writing $file (Qwen3-0.6B geometry, random weights)" >&2
            build/inferno synth -o "$file" --type "$type" \
                --name "Qwen3-0.6B-geometry synthetic ($type, random weights)" >&2
        fi
        models="$models $file"
    done
fi

if [ $mmap -eq 1 ]; then inferno_load=""; llama_load=mmap; else inferno_load=--no-mmap; llama_load=none; fi
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p bench/results
results=bench/results/vs-llama-$stamp.jsonl
tmp=$(mktemp)
errf=$(mktemp)
trap 'rm -f "$tmp" "$errf"' EXIT
rev=$(git rev-parse --short HEAD 2>/dev/null || echo none)
# The model name alone ("AMD EPYC") does not tell Zen 3 from Zen 5: the
# family and model numbers do, and the AMX flag tells which Xeon path ran.
cpuinfo_field() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -n 1; }
cpu=$(cpuinfo_field 'model name')
cpu_family=$(cpuinfo_field 'cpu family')
cpu_model=$(cpuinfo_field 'model')
if grep -q -m 1 '^flags.* amx_tile' /proc/cpuinfo; then cpu_amx=true; else cpu_amx=false; fi
printf '{"kind": "meta", "date_utc": "%s", "git": "%s", "cpu": "%s", "cpu_family": "%s", "cpu_model": "%s", "cpu_amx": %s, "cores_online": %s, "rounds": %s, "reps": %s, "kv_type": "%s", "load": "%s", "parallel": "%s", "par_steps": %s, "par_depth": %s, "parallel_only": %s}\n' \
    "$stamp" "$rev" "$cpu" "$cpu_family" "$cpu_model" "$cpu_amx" "$(nproc)" "$rounds" "$reps" "$kv" "$llama_load" "$par_list" "$par_steps" "$par_depth" \
    "$([ $par_only -eq 1 ] && echo true || echo false)" >"$results"

# run ENGINE MODEL THREADS ROUND: one bench run, its lines tagged and appended
run() {
    start=$(date +%s)
    load=$(cut -d ' ' -f 1 /proc/loadavg)
    if [ "$1" = inferno ]; then
        build/inferno bench -m "$2" -t "$3" -p "$prefill" -n "$n_decode" -d "$depths" -r "$reps" \
            --kv-type "$kv" $inferno_load --json >"$tmp"
    else
        "$LLAMA" bench -m "$2" -t "$3" -p "$prefill" -n "$n_decode" -d "$depths" -r "$reps" \
            --kv-type "$kv" --load-mode "$llama_load" --poll "$poll" >"$tmp"
    fi
    sed "s|^{|{\"round\": $4, \"file\": \"$2\", \"loadavg1_before\": $load, |" "$tmp" >>"$results"
    echo "bench-vs-llama: round $4/$rounds $1 $(basename "$2") -t $3: $(( $(date +%s) - start )) s (load average before: $load)" >&2
}

# run_par ENGINE MODEL THREADS STREAMS ROUND: one batched-decode run
run_par() {
    start=$(date +%s)
    load=$(cut -d ' ' -f 1 /proc/loadavg)
    if [ "$1" = inferno ]; then
        if ! build/inferno bench -m "$2" -t "$3" --parallel "$4" -n "$par_steps" -d "$par_depth" -r "$reps" \
            --kv-type "$kv" $inferno_load --json >"$tmp" 2>"$errf"; then
            echo "bench-vs-llama: inferno bench --parallel $4 failed:" >&2
            sed 's/^/    /' "$errf" >&2
            exit 1
        fi
        cat "$errf" >&2
    else
        "$LLAMA" parallel -m "$2" -t "$3" --parallel "$4" -n "$par_steps" -d "$par_depth" -r "$reps" \
            --kv-type "$kv" --load-mode "$llama_load" --poll "$poll" >"$tmp"
    fi
    if ! grep '"kind": *"parallel"' "$tmp" | grep -q "\"streams\": *$4[,}]"; then
        echo "bench-vs-llama: $1 printed no \"kind\": \"parallel\" row for $4 streams; its output:" >&2
        sed 's/^/    /' "$tmp" >&2
        exit 1
    fi
    sed "s|^{|{\"round\": $5, \"section\": \"parallel\", \"file\": \"$2\", \"loadavg1_before\": $load, |" "$tmp" >>"$results"
    echo "bench-vs-llama: round $5/$rounds $1 $(basename "$2") -t $3 --parallel $4: $(( $(date +%s) - start )) s (load average before: $load)" >&2
}

t_all=$(date +%s)
round=1
[ $par_only -eq 0 ] || round=$((rounds + 1))
while [ $round -le "$rounds" ]; do
    for model in $models; do
        for t in $(echo "$threads" | tr , ' '); do
            if [ $((round % 2)) -eq 1 ]; then
                run inferno "$model" "$t" $round
                run llama "$model" "$t" $round
            else
                run llama "$model" "$t" $round
                run inferno "$model" "$t" $round
            fi
        done
    done
    round=$((round + 1))
done

if [ -n "$par_list" ]; then
    round=1
    while [ $round -le "$rounds" ]; do
        for model in $models; do
            for t in $(echo "$threads" | tr , ' '); do
                for n in $(echo "$par_list" | tr , ' '); do
                    if [ $((round % 2)) -eq 1 ]; then
                        run_par inferno "$model" "$t" "$n" $round
                        run_par llama "$model" "$t" "$n" $round
                    else
                        run_par llama "$model" "$t" "$n" $round
                        run_par inferno "$model" "$t" "$n" $round
                    fi
                done
            done
        done
        round=$((round + 1))
    done
fi

table "$results"
echo "bench-vs-llama: $(( $(date +%s) - t_all )) s in all; results in $results" >&2
