#!/bin/sh
# How long loading takes, for the same weights in three forms: a synthetic
# model in a released Qwen3 geometry (default 0.6b: 28 layers, BF16
# matrices, f32 norms, the full vocabulary, seed 1) as
#   (a) the BF16 GGUF `inferno synth` writes,
#   (b) a Hugging Face safetensors directory of the same tensors
#       (build/gguf_to_hf, as scripts/synth-hf.sh makes one),
#   (c) that directory with --quantize q8_0 (quantized while loading),
# each mapped (the default) and read into memory (--no-mmap); (c) reads the
# weights once whatever the flag, and the GGUF with --quantize q8_0 is
# there to compare (c) with.
#
# Each figure is `inferno bench`'s load time ("loaded in", JSON load_s:
# inf_model_load, from open to a model ready to run), and the same plus a
# one-token prefill (the prefill's time to first token), which for a mapped
# file includes faulting the weights in: the time until a first token
# could be produced. Median (min-max) of RUNS runs per form, back to back
# after one untimed load of that form; the page cache is warm (the files
# are read once first), so these are CPU and memory times, not disk times.
# (On the shared 2-core VM this was written on, the first --no-mmap load
# after a run of another form often took 2-5x the steady time, 0.85 s
# against 0.24 s, whichever the format; the untimed load takes that.) Raw
# JSON lines go to bench/results/load-DATE.jsonl.
#
#   sh scripts/bench-load.sh [-r RUNS] [-t THREADS] [--geometry G]   RUNS 5, THREADS 2
#   sh scripts/bench-load.sh --decode-4b [-r RUNS] [-t THREADS]
#        (d) instead: decode speed of the 4B geometry (36 layers, BF16, ~8 GB
#        each) from the directory and from the GGUF, `inferno bench -p 0
#        -n 16 -d 0`, mapped and --no-mmap, alternating (as root, the page
#        cache dropped and both files read again each round); needs ~17 GB
#        of disk in .deps/bench-load and ~17 GB of free memory
#
# The models stay in .deps/bench-load (git-ignored) for the next run.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/.deps/bench-load"
INFERNO="$ROOT/build/inferno"
runs=5 threads=2 geometry=0.6b decode=0
while [ $# -gt 0 ]; do
    case "$1" in
        -r) runs=$2; shift 2 ;;
        -t) threads=$2; shift 2 ;;
        --geometry) geometry=$2; shift 2 ;;
        --decode-4b) decode=1 geometry=4b; shift ;;
        -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-load: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
(cd "$ROOT" && make -j2 build/inferno build/gguf_to_hf >/dev/null)
mkdir -p "$OUT" "$ROOT/bench/results"
gguf="$OUT/$geometry-bf16.gguf" dir="$OUT/$geometry-hf"
if [ ! -f "$gguf" ]; then
    "$INFERNO" synth -o "$gguf.part" --geometry "$geometry" --type bf16 --seed 1 --name "bench-load-$geometry" 2>/dev/null
    mv "$gguf.part" "$gguf"
fi
if [ ! -f "$dir/model.safetensors" ]; then
    rm -rf "$dir"
    "$ROOT/build/gguf_to_hf" "$gguf" "$dir" "$ROOT/data/qwen3-tokenizer"
fi
results="$ROOT/bench/results/load-$(date +%Y%m%d-%H%M%S).jsonl"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "bench-load: $geometry BF16, $(du -sh "$gguf" | cut -f1) GGUF / $(du -sh "$dir" | cut -f1) directory; $cpu, $(nproc) CPUs, $threads threads"
echo "bench-load: load average $(cut -d' ' -f1-3 /proc/loadavg) before; raw lines in ${results#"$ROOT/"}"

median_of() { # the median (min-max) of the numbers on stdin, %.3f
    sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'
}

if [ $decode -eq 1 ]; then
    # (d): decode from the directory and from the GGUF, mapped and read into
    # memory (--no-mmap: each form's data section lands 64-byte aligned,
    # the directory's tensors too), alternating. Where the page cache can
    # be dropped (root), each round first drops it and reads both files
    # afresh, in alternating order: on the KVM guests this was measured on,
    # a mapped file's decode speed moved by up to 1.9x with where its page
    # cache happened to lie (the same file, 1.8 or 3.4 tok/s, from one
    # reading of it to the next; anonymous memory read at 30 GB/s
    # throughout), so one placement per form would compare placements.
    : >"$OUT/decode.txt"
    for r in $(seq 1 "$runs"); do
        if [ -w /proc/sys/vm/drop_caches ]; then
            sync
            echo 3 >/proc/sys/vm/drop_caches
            if [ $((r % 2)) -eq 1 ]; then cat "$gguf" "$dir/model.safetensors" >/dev/null
            else cat "$dir/model.safetensors" "$gguf" >/dev/null; fi
        fi
        for mode in mapped no-mmap; do
            for form in gguf dir; do
                if [ $form = gguf ]; then m=$gguf f=$gguf; else m=$dir f=$dir/model.safetensors; fi
                flag=""
                if [ $mode = mapped ]; then cat "$f" >/dev/null; else flag=--no-mmap; fi # (pages in, if they went out)
                "$INFERNO" bench -m "$m" $flag -t "$threads" -p 0 -n 16 -d 0 -r 3 --bw-mib 0 --json 2>/dev/null |
                    tee -a "$results" |
                    sed -n "s/.*\"kind\": \"decode\".*\"tok_s_median\": \([0-9.]*\).*/$mode-$form \1/p" \
                    >>"$OUT/decode.txt"
            done
        done
    done
    for mode in mapped no-mmap; do
        for form in gguf dir; do
            printf '  decode 16 @ 0, %-7s %-4s  tok/s %s\n' "$mode" "$form" \
                "$(sed -n "s/^$mode-$form //p" "$OUT/decode.txt" | median_of)"
        done
    done
    echo "bench-load: load average $(cut -d' ' -f1-3 /proc/loadavg) after"
    exit 0
fi

cat "$gguf" "$dir/model.safetensors" >/dev/null # the page cache warm
forms="gguf-mmap gguf-read dir-mmap dir-read dir-q8_0 gguf-q8_0"
# one load of FORM, its JSON lines appended to FILE: prints "load_s ttft_s peak_rss_mb"
load_once() {
    log=$2
    case "$1" in
        gguf-mmap) set -- "$gguf" ;;
        gguf-read) set -- "$gguf" --no-mmap ;;
        dir-mmap) set -- "$dir" ;;
        dir-read) set -- "$dir" --no-mmap ;;
        dir-q8_0) set -- "$dir" --quantize q8_0 ;;
        gguf-q8_0) set -- "$gguf" --quantize q8_0 ;;
    esac
    "$INFERNO" bench -m "$@" -t "$threads" -p 1 -n 0 -r 1 --no-warmup --bw-mib 0 --json 2>/dev/null | tee -a "$log" |
        awk '/"kind": "prefill"/ { match($0, /"ttft_ms_median": [0-9.]+/); t = substr($0, RSTART + 18, RLENGTH - 18) / 1e3 }
             /"kind": "summary"/ { match($0, /"load_s": [0-9.]+/); l = substr($0, RSTART + 10, RLENGTH - 10);
                                   match($0, /"peak_rss_mb": [0-9.]+/); p = substr($0, RSTART + 15, RLENGTH - 15) }
             END { printf "%s %s %s\n", l, t, p }'
}
: >"$OUT/load.txt"
for form in $forms; do
    load_once "$form" /dev/null >/dev/null # untimed
    for r in $(seq 1 "$runs"); do echo "$form $(load_once "$form" "$results")" >>"$OUT/load.txt"; done
done
printf '  %-10s %-24s %-24s %s\n' form "load s" "load + 1-token prefill s" "peak RSS MB"
for form in $forms; do
    rows=$(grep "^$form " "$OUT/load.txt")
    load=$(echo "$rows" | awk '{ print $2 }' | median_of)
    first=$(echo "$rows" | awk '{ print $2 + $3 }' | median_of)
    rss=$(echo "$rows" | awk '{ print $4 }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    printf '  %-10s %-24s %-24s %s\n' "$form" "$load" "$first" "$rss"
done
echo "bench-load: load average $(cut -d' ' -f1-3 /proc/loadavg) after"
