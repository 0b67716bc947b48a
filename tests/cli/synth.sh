#!/bin/sh
# CLI test of `inferno synth`: usage errors give one line on stderr naming
# the flag and exit 2; a tiny model is written (header byte-identical to the
# golden tiny-a file) and loads with `inferno info`; an untied f16 model in
# another geometry loads too. A few seconds.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh

# expect_exit WHAT CODE PATTERN ARGS...: exit code, one stderr line matching PATTERN, no file
expect_exit() {
    what=$1 code=$2 pattern=$3
    shift 3
    rm -f "$tmp/x.gguf"
    "$INFERNO" synth "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q -e "$pattern" "$tmp/err" && [ ! -e "$tmp/x.gguf" ]; then
        ok
    else
        bad "$what: exit $rc (want $code), $lines stderr lines, want '$pattern'"
        cat "$tmp/err"
    fi
}

TINY="--layers 2 --embd 64 --heads 4 --kv-heads 2 --head-dim 16 --ff 128 --vocab 8192"
check "--help exits 0 with usage on stdout" '"$INFERNO" synth --help | grep -q "^usage: inferno synth"'
expect_exit "no output" 2 "-o" --layers 2
expect_exit "unknown flag" 2 "--frobnicate" -o "$tmp/x.gguf" --frobnicate
expect_exit "bad --type" 2 "--type" -o "$tmp/x.gguf" --type q4_k
expect_exit "zero --layers" 2 "--layers" -o "$tmp/x.gguf" --layers 0
expect_exit "non-numeric --embd" 2 "--embd" -o "$tmp/x.gguf" --embd 64x
expect_exit "negative --vocab" 2 "--vocab" -o "$tmp/x.gguf" --vocab -5
expect_exit "bad --seed" 2 "--seed" -o "$tmp/x.gguf" --seed -1
expect_exit "--heads not a multiple of --kv-heads" 2 "--kv-heads" -o "$tmp/x.gguf" --heads 6 --kv-heads 4
expect_exit "q8_0 with --embd 48" 2 "--embd" -o "$tmp/x.gguf" --embd 48
expect_exit "--ctx without a value" 2 "--ctx" -o "$tmp/x.gguf" --ctx
expect_exit "--vocab 10 leaves no BPE tokens" 2 "n_vocab" -o "$tmp/x.gguf" $TINY --vocab 10
expect_exit "missing tokenizer" 1 "no-such.json" -o "$tmp/x.gguf" $TINY --tokenizer "$tmp/no-such.json"

if "$INFERNO" synth -o "$tmp/tiny.gguf" $TINY --name "Qwen3 synthetic tiny-a" 2>"$tmp/err"; then ok; else bad "tiny synth failed"; cat "$tmp/err"; fi
# the header (metadata + tensor infos, 263584 bytes) equals the golden file's
check "tiny header equals the golden tiny-a-q8_0" 'cmp -s -n 263584 "$tmp/tiny.gguf" tests/data/golden/tiny-a-q8_0.gguf'
check "tiny file size equals the golden" '[ "$(wc -c <"$tmp/tiny.gguf")" -eq "$(wc -c <tests/data/golden/tiny-a-q8_0.gguf)" ]'
check "tiny loads" '"$INFERNO" info -m "$tmp/tiny.gguf" >"$tmp/info" 2>&1 && grep -q "layers *2" "$tmp/info"'

if "$INFERNO" synth -o "$tmp/u.gguf" --type f16 --untied --layers 2 --embd 96 --heads 6 --kv-heads 6 \
        --head-dim 24 --ff 160 --vocab 500 --seed 9 2>"$tmp/err"; then ok; else bad "untied f16 synth failed"; cat "$tmp/err"; fi
check "untied f16 loads" '"$INFERNO" info -m "$tmp/u.gguf" >"$tmp/info" 2>&1 && grep -q "separate" "$tmp/info"'
check "untied f16 gives logits" '"$INFERNO" logits -m "$tmp/u.gguf" --tokens 1,2,3 --top 3 | grep -q "\"top\""'

finish
