#!/bin/sh
# CLI test of `inferno tokenize` and `inferno detokenize`: --help, usage errors
# (exit 2, one stderr line), runtime errors (exit 1: invalid UTF-8 naming its
# offset, a missing file, a bad --jsonl line), TEXT vs stdin taken exactly,
# --no-special, --jsonl against the first 200 corpus goldens, detokenize
# printing the exact bytes (no newline added), and the tiny golden GGUF
# giving llama.cpp's ids for its first prompt. About a second.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
JSON=data/qwen3-tokenizer/tokenizer.json

# expect_exit WHAT CODE PATTERN COMMAND ARGS... (stdin from /dev/null unless redirected by the caller)
expect_exit() {
    what=$1 code=$2 pattern=$3
    shift 3
    "$INFERNO" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then ok; else
        bad "$what: exit $rc (want $code), $lines stderr lines"; cat "$tmp/err"; fi
}

check "tokenize --help" '"$INFERNO" tokenize --help | grep -q "^usage: inferno tokenize"'
check "detokenize --help" '"$INFERNO" detokenize --help | grep -q "^usage: inferno detokenize"'
expect_exit "tokenize without -m" 2 "-m PATH" tokenize "hi" </dev/null
expect_exit "tokenize unknown flag" 2 "--frob" tokenize -m "$JSON" --frob </dev/null
expect_exit "tokenize two texts" 2 "TEXT" tokenize -m "$JSON" a b </dev/null
expect_exit "--jsonl with TEXT" 2 "jsonl" tokenize -m "$JSON" --jsonl hi </dev/null
expect_exit "tokenize missing file" 1 "no-such.json" tokenize -m "$tmp/no-such.json" hi </dev/null
expect_exit "detokenize without ids" 2 "required" detokenize -m "$JSON"
expect_exit "detokenize malformed list" 2 "malformed" detokenize -m "$JSON" "1,,2"
expect_exit "detokenize id out of range" 2 "151669" detokenize -m "$JSON" "1,151669"

check "TEXT argument" '[ "$("$INFERNO" tokenize -m "$JSON" "Hello world")" = "[9707,1879]" ]'
check "stdin taken exactly (trailing newline kept)" \
    '[ "$(printf "Hello world\n" | "$INFERNO" tokenize -m "$JSON")" = "[9707,1879,198]" ]'
check "empty stdin" '[ "$("$INFERNO" tokenize -m "$JSON" </dev/null)" = "[]" ]'
check "-- before a TEXT that starts with a dash" '[ "$("$INFERNO" tokenize -m "$JSON" -- "-5")" = "[12,20]" ]'
check "special tokens matched" '[ "$("$INFERNO" tokenize -m "$JSON" "<|im_end|>")" = "[151645]" ]'
check "--no-special: the text of a special token is plain text (HF ids without added tokens)" \
    '[ "$("$INFERNO" tokenize -m "$JSON" --no-special "<|im_end|>")" = "[27,91,318,6213,91,29]" ]'

printf 'ok \377 bad' > "$tmp/bad.txt"
expect_exit "invalid UTF-8 on stdin" 1 "offset 3" tokenize -m "$JSON" < "$tmp/bad.txt"

head -n 200 tests/data/tokenizer/corpus.jsonl > "$tmp/corpus.jsonl"
head -n 200 tests/data/tokenizer/ids.jsonl > "$tmp/want.jsonl"
check "--jsonl equals the goldens (200 lines)" \
    '"$INFERNO" tokenize -m "$JSON" --jsonl < "$tmp/corpus.jsonl" > "$tmp/got.jsonl" && cmp -s "$tmp/got.jsonl" "$tmp/want.jsonl"'
head -n 200 tests/data/tokenizer/ids-no-special.jsonl > "$tmp/want.jsonl"
check "--jsonl --no-special equals the goldens (200 lines)" \
    '"$INFERNO" tokenize -m "$JSON" --jsonl --no-special < "$tmp/corpus.jsonl" > "$tmp/got.jsonl" && cmp -s "$tmp/got.jsonl" "$tmp/want.jsonl"'
printf '"a"\n\n"b"\nnot json\n' > "$tmp/mixed.jsonl"
expect_exit "--jsonl bad line" 1 "line 4" tokenize -m "$JSON" --jsonl < "$tmp/mixed.jsonl"
check "--jsonl prints lines before the bad one, skips blank lines" '[ "$(cat "$tmp/out")" = "$(printf "[64]\n[65]")" ]'

check "detokenize prints the exact bytes" '"$INFERNO" detokenize -m "$JSON" 9707,1879,198 > "$tmp/d" && printf "Hello world\n" | cmp -s - "$tmp/d"'
check "detokenize keeps added tokens" '[ "$("$INFERNO" detokenize -m "$JSON" 151644,872)" = "<|im_start|>user" ]'

GGUF=tests/data/golden/tiny-a-f32.gguf
check "GGUF vocabulary: llama.cpp's ids for prompt p1" \
    '[ "$("$INFERNO" tokenize -m "$GGUF" "The quick brown fox jumps over the lazy dog.")" = "[785,3974,293,4830,282,5131,7784,82,916,279,1187,4246,5562,13]" ]'

finish
