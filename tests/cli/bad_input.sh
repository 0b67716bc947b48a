#!/bin/sh
# Bad input table: each case must exit with the right code (1 runtime error,
# 2 usage error), print exactly one line on stderr that names the problem,
# and finish (every command runs under `timeout`: a hang fails the case).
# Broken model files are made from a tiny synthetic model: cut short, bytes
# overwritten (a count, a tensor type), the architecture renamed, split
# into shards of which one is missing, miscounted or repeats a tensor.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
trap 'chmod -R u+rw "$tmp"; rm -rf "$tmp"' EXIT
M="$tmp/tiny.gguf"

# expect CODE PATTERN ARGS...: exit CODE, one stderr line matching PATTERN (grep -E)
expect() {
    code=$1 pattern=$2
    shift 2
    timeout 30 "$INFERNO" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -Eq -e "$pattern" "$tmp/err"; then
        ok
    else
        bad "inferno $*: exit $rc (want $code), $lines stderr lines (want 1 matching '$pattern'):"
        sed 's/^/    /' "$tmp/err"
    fi
}

if ! "$INFERNO" synth -o "$M" --layers 1 --embd 64 --heads 2 --kv-heads 1 --head-dim 32 --ff 128 --vocab 1000 >/dev/null 2>"$tmp/err"; then
    cat "$tmp/err"
    echo "0 passed, 1 failed"
    exit 1
fi
size=$(wc -c <"$M")
M16="$tmp/tiny-hd16.gguf" # head_dim 16: too short for Q8_0 rows
"$INFERNO" synth -o "$M16" --layers 1 --embd 64 --heads 2 --kv-heads 1 --head-dim 16 --ff 128 --vocab 1000 >/dev/null 2>&1

# broken files
echo "just some text" >"$tmp/text.gguf"
: >"$tmp/empty.gguf"
head -c 100 "$M" >"$tmp/cut-header.gguf"
head -c $((size - 1000)) "$M" >"$tmp/cut-data.gguf"
cp "$M" "$tmp/huge-count.gguf"   # metadata count (offset 16) = 2^63 - 1
printf '\377\377\377\377\377\377\377\177' | dd of="$tmp/huge-count.gguf" bs=1 seek=16 conv=notrunc 2>/dev/null
cp "$M" "$tmp/bad-version.gguf"  # version (offset 4) = 99
printf '\143\000\000\000' | dd of="$tmp/bad-version.gguf" bs=1 seek=4 conv=notrunc 2>/dev/null
LC_ALL=C sed 's/qwen3/llama/g' "$M" >"$tmp/llama.gguf"
cp "$M" "$tmp/q6k.gguf"          # output_norm.weight: type 14 (q6_K), its 64 elements not whole blocks
name_at=$(grep -obUa "output_norm.weight" "$tmp/q6k.gguf" | head -n 1 | cut -d: -f1)
# name, then n_dims (4 bytes) and one dimension (8 bytes), then the type
printf '\016\000\000\000' | dd of="$tmp/q6k.gguf" bs=1 seek=$((name_at + 18 + 4 + 8)) conv=notrunc 2>/dev/null
cp "$M" "$tmp/iq2.gguf"          # output_norm.weight: type 16 (iq2_xxs), a type inferno does not load
printf '\020\000\000\000' | dd of="$tmp/iq2.gguf" bs=1 seek=$((name_at + 18 + 4 + 8)) conv=notrunc 2>/dev/null
mkdir "$tmp/dir.gguf"
cp "$M" "$tmp/unreadable.gguf"
chmod 000 "$tmp/unreadable.gguf"

for cmd in run info chat; do
    expect 1 "missing.gguf: cannot open" $cmd -m "$tmp/missing.gguf"
    expect 1 "dir.gguf: not a regular file" $cmd -m "$tmp/dir.gguf"
    expect 1 "text.gguf: not a GGUF file" $cmd -m "$tmp/text.gguf"
    expect 1 "llama.gguf: general.architecture is 'llama'" $cmd -m "$tmp/llama.gguf"
done
expect 1 "empty.gguf" run -m "$tmp/empty.gguf" -p hi
expect 1 "cut-header.gguf: .*(cannot fit|past the end|truncated|short)" run -m "$tmp/cut-header.gguf" -p hi
expect 1 "cut-data.gguf: tensor '.*' data .* past the end" run -m "$tmp/cut-data.gguf" -p hi
expect 1 "huge-count.gguf: metadata count .* cannot fit" run -m "$tmp/huge-count.gguf" -p hi
expect 1 "bad-version.gguf: .*version" run -m "$tmp/bad-version.gguf" -p hi
expect 1 "q6k.gguf: tensor 'output_norm.weight' of type q6_k has rows of 64 elements, not a multiple of 256" \
    run -m "$tmp/q6k.gguf" -p hi
expect 1 "iq2.gguf: tensor 'output_norm.weight' has type iq2_xxs, which inferno does not load" run -m "$tmp/iq2.gguf" -p hi
expect 1 "iq2.gguf: tensor 'output_norm.weight' has type iq2_xxs" info -m "$tmp/iq2.gguf"
if [ "$(id -u)" -ne 0 ]; then # root reads any file
    expect 1 "unreadable.gguf: cannot open: Permission denied" run -m "$tmp/unreadable.gguf" -p hi
fi

# split GGUFs, llama.cpp's gguf-split layout written by build/gguf_split: 13
# tensors, 3 a shard, so shard 1 holds blk.0.attn_q and shard 2 blk.0.attn_k
# (the loader's own table is in test_model.c)
SPLIT="$(dirname "$INFERNO")/gguf_split"
for case in good missing count dup; do
    mkdir "$tmp/split-$case"
    "$SPLIT" --split-max-tensors 3 "$M" "$tmp/split-$case/tiny" >/dev/null || bad "gguf_split $case"
done
S=tiny-00001-of-00005.gguf
"$INFERNO" logits -m "$M" --tokens 1,2,3 >"$tmp/logits-whole" 2>&1
"$INFERNO" logits -m "$tmp/split-good/tiny-00003-of-00005.gguf" --tokens 1,2,3 >"$tmp/logits-split" 2>&1
check "a split GGUF named by shard 3 gives the unsplit file's logits" 'cmp -s "$tmp/logits-whole" "$tmp/logits-split"'
split_mib=$(cat "$tmp"/split-good/tiny-0000?-of-00005.gguf | wc -c | awk '{ printf "%.1f", $1 / 1048576 }')
"$INFERNO" info -m "$tmp/split-good/tiny-00003-of-00005.gguf" >"$tmp/info-split" 2>&1
check "info on shard 3 of a split GGUF: all 5 shards' size ($split_mib MiB) on its file line" \
    'grep -q "^file  *.*/tiny-00003-of-00005.gguf ($split_mib MiB in 5 shards)$" "$tmp/info-split"'
rm "$tmp/split-missing/tiny-00004-of-00005.gguf"
count_at=$(grep -obUa "split.count" "$tmp/split-count/tiny-00002-of-00005.gguf" | head -n 1 | cut -d: -f1)
# the key, then its type (4 bytes), then the u16 value: 6
printf '\006\000' | dd of="$tmp/split-count/tiny-00002-of-00005.gguf" bs=1 seek=$((count_at + 11 + 4)) conv=notrunc 2>/dev/null
LC_ALL=C sed -i 's/blk\.0\.attn_k\.weight/blk.0.attn_q.weight/' "$tmp/split-dup/tiny-00002-of-00005.gguf"
for cmd in run info; do
    expect 1 "split-missing/tiny-00004-of-00005.gguf: cannot open shard 4 of 5: No such file" $cmd -m "$tmp/split-missing/$S"
    expect 1 "split-count/tiny-00002-of-00005.gguf: split.count is 6, but the shard's name says 5 shards" \
        $cmd -m "$tmp/split-count/$S"
    expect 1 "split-dup/tiny-00002-of-00005.gguf: tensor 'blk.0.attn_q.weight' is also in .*split-dup/$S" \
        $cmd -m "$tmp/split-dup/$S"
done
cp "$tmp/split-good/$S" "$tmp/shard1.gguf"
expect 1 "shard1.gguf: split.count is 5, so this is one shard of a split GGUF, but its name does not end in -00001-of-00005.gguf" \
    run -m "$tmp/shard1.gguf" -p hi

# Hugging Face checkpoint directories (the loader's own table is in test_hf_checkpoint.c)
mkdir "$tmp/hf-llama" "$tmp/hf-noweights" "$tmp/hf-badst" "$tmp/hf-badjson"
cfg='{"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
 "num_key_value_heads": 1, "head_dim": 32, "num_hidden_layers": 1, "vocab_size": 1000}'
echo "$cfg" | sed 's/"qwen3"/"llama"/' >"$tmp/hf-llama/config.json"
echo "$cfg" >"$tmp/hf-noweights/config.json"
echo "$cfg" >"$tmp/hf-badst/config.json"
printf '\020\000\000\000\000\000\000\000{"a": [1, 2, 3]}' >"$tmp/hf-badst/model.safetensors"
echo "$cfg" | sed 's/"hidden_size": 64/"hidden_size": "64"/' >"$tmp/hf-badjson/config.json"
for cmd in run info chat; do
    expect 1 "hf-llama/config.json: \"model_type\" is 'llama'; inferno runs qwen3 models" $cmd -m "$tmp/hf-llama"
    expect 1 "hf-noweights: no model.safetensors or model.safetensors.index.json" $cmd -m "$tmp/hf-noweights"
done
expect 1 "hf-badst/model.safetensors: tensor 'a': expected an object" run -m "$tmp/hf-badst" -p hi
expect 1 "hf-badjson/config.json: \"hidden_size\" must be an integer" logits -m "$tmp/hf-badjson" --tokens 1
expect 2 "--quantize wants q8_0, got 'q4_k'" run -m "$M" -p hi --quantize q4_k
expect 1 "hf-noweights: no tokenizer.json" convert "$tmp/hf-noweights" -o "$tmp/out.gguf"
expect 1 "tiny.gguf: not a directory" convert "$M" -o "$tmp/out.gguf"
expect 2 "-o OUT.gguf is required" convert "$tmp/hf-llama"
expect 2 "--type wants f32, f16, bf16 or q8_0, got 'q4'" convert "$tmp/hf-llama" -o "$tmp/out.gguf" --type q4
if [ -e "$tmp/out.gguf" ]; then bad "convert left $tmp/out.gguf behind"; else ok; fi
expect 2 "--quantize wants q8_0, got 'bf16'" serve -m "$M" --quantize bf16

# prompts
expect 1 "the prompt has [0-9]+ tokens but the context holds 8" run -m "$M" -c 8 -p "a prompt that is far longer than eight tokens, surely"
expect 2 "the prompt is empty" run -m "$M" -p ""
expect 1 "prompt.txt: cannot read the prompt file" run -m "$M" -f "$tmp/prompt.txt"
expect 1 "is a directory" run -m "$M" -f "$tmp/dir.gguf"
expect 2 "give one of -p, -f and --tokens" run -m "$M" -p hi --tokens 1,2
expect 2 "--tokens wants a list" run -m "$M" --tokens 1,,2
expect 2 "token id 5000 .* outside the vocabulary" run -m "$M" --tokens 5000

# flags and values
expect 2 "unknown option '--frobnicate'" run -m "$M" -p hi --frobnicate
expect 2 "unknown option '--frobnicate'" chat -m "$M" --frobnicate
expect 2 "unknown option '--frobnicate'" info -m "$M" --frobnicate
expect 2 "-n wants a token count .* got '-5'" run -m "$M" -p hi -n -5
expect 2 "--temp wants a number .* got 'abc'" run -m "$M" -p hi --temp abc
expect 2 "--temp wants a number .* got '-1'" run -m "$M" -p hi --temp -1
expect 2 "--top-p wants a number from 0 to 1, got '1.5'" run -m "$M" -p hi --top-p 1.5
expect 2 "--min-p wants a number from 0 to 1, got 'x'" chat -m "$M" --min-p x
expect 2 "--top-k wants a count from 0, got '-3'" run -m "$M" -p hi --top-k -3
expect 2 "--repeat-penalty wants a number above 0, got '0'" run -m "$M" -p hi --repeat-penalty 0
expect 2 "--repeat-last-n wants a count" run -m "$M" -p hi --repeat-last-n -2
expect 2 "--seed wants a number" run -m "$M" -p hi --seed 1e5
expect 2 "--stop wants a non-empty string" run -m "$M" -p hi --stop ""
expect 2 "--logit-bias wants TOKEN_ID\+BIAS" run -m "$M" -p hi --logit-bias 12
expect 2 "logit bias for token 5000, outside the vocabulary" run -m "$M" -p hi --logit-bias 5000+1
expect 2 "option -p needs a value" run -m "$M" -p
expect 2 "-c wants a context length" run -m "$M" -p hi -c 0
expect 2 "-t wants a thread count" run -m "$M" -p hi -t zero
expect 2 "--kv-type wants f32, f16 or q8_0, got 'q4'" chat -m "$M" --kv-type q4
expect 2 "--kv-type wants f32, f16 or q8_0, got 'q4'" run -m "$M" -p hi --kv-type q4
expect 1 "q8_0 KV cache needs qwen3.attention.key_length \(head_dim 16\) to be a multiple of 32" \
    run -m "$M16" -p hi --kv-type q8_0
expect 2 "--system and --no-think need --chat" run -m "$M" -p hi --system "x"
expect 2 "the prompt is empty" run -m "$M" --json -f /dev/null
expect 2 "chat reads its messages from the terminal" chat -m "$M" -p hi
expect 2 "no model" info
expect 2 "unknown command 'frobnicate'" frobnicate
expect 1 "context length 100000 exceeds the model's 40960" run -m "$M" -p hi -c 100000

# help and version: stdout, exit 0
for cmd in run chat info tokenize detokenize template bench synth logits convert; do
    if "$INFERNO" $cmd --help >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: inferno $cmd" "$tmp/out" && [ ! -s "$tmp/err" ]; then ok; else bad "$cmd --help"; fi
done
if "$INFERNO" --version | grep -Eq "^inferno [0-9]+\.[0-9]+\.[0-9]+$"; then ok; else bad "--version"; fi

finish
