#!/bin/sh
# CLI test of `inferno template`: every chat golden rendered through the
# command is byte-identical to the expected file (nothing appended), and
# usage/input errors give one line on stderr with exit code 2/1.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
CONFIG=data/qwen3-tokenizer/tokenizer_config.json
DIR=tests/data/chat

# expect_exit WHAT CODE CMD... : runs CMD (stdin as the caller redirects it),
# checks the exit code and that stderr is exactly one error line (besides a
# note naming a fallback template)
expect_exit() {
    what=$1 code=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(grep -vc "^inferno template: note:" "$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ]; then ok; else bad "$what: exit $rc (want $code), $lines stderr lines"; cat "$tmp/err"; fi
}

# a tokenizer_config.json whose template is not Qwen3's: the ChatML fallback
cat >"$tmp/tokenizer_config.json" <<'JSON'
{"chat_template": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"}
JSON

for request in "$DIR"/*.request.json; do
    name=$(basename "$request" .request.json)
    model=$CONFIG
    case $name in chatml-*) model=$tmp/tokenizer_config.json ;; esac
    if [ -f "$DIR/$name.expected.txt" ]; then
        if "$INFERNO" template -m "$model" <"$request" >"$tmp/out" 2>"$tmp/err" && cmp -s "$tmp/out" "$DIR/$name.expected.txt"; then
            ok
        else
            bad "$name: output differs from $name.expected.txt"
            cmp "$tmp/out" "$DIR/$name.expected.txt" | head -n 1
        fi
    else
        expect_exit "$name (the template raises)" 1 "$INFERNO" template -m "$model" <"$request"
    fi
done

# the same prompt from tokenizer.json (its config beside it)
"$INFERNO" template -m data/qwen3-tokenizer/tokenizer.json <"$DIR/15-tools-with-system.request.json" >"$tmp/out" 2>/dev/null
check "tokenizer.json gives the config's template" 'cmp -s "$tmp/out" "$DIR/15-tools-with-system.expected.txt"'

check "--describe qwen3" '[ "$("$INFERNO" template -m $CONFIG --describe)" = qwen3 ]'
check "--describe fallback" '"$INFERNO" template -m "$tmp/tokenizer_config.json" --describe | grep -q "generic ChatML"'
"$INFERNO" template -m "$tmp/tokenizer_config.json" <"$DIR/chatml-01-basic.request.json" >/dev/null 2>"$tmp/err"
check "fallback note on stderr" 'grep -q "note: unknown template" "$tmp/err"'

check "--help exits 0 with usage on stdout" '"$INFERNO" template --help | grep -q "^usage: inferno template"'
expect_exit "no -m" 2 "$INFERNO" template </dev/null
expect_exit "-m without a value" 2 "$INFERNO" template -m </dev/null
expect_exit "unknown option" 2 "$INFERNO" template -m "$CONFIG" --bogus </dev/null
expect_exit "missing model file" 1 "$INFERNO" template -m "$tmp/none.json" </dev/null
echo 'not json' >"$tmp/bad.json" </dev/null
expect_exit "malformed model file" 1 "$INFERNO" template -m "$tmp/bad.json" </dev/null
printf '{"messages": [' >"$tmp/req"
expect_exit "malformed request" 1 "$INFERNO" template -m "$CONFIG" <"$tmp/req"
printf '{"messages": [{"content": "hi"}]}' >"$tmp/req"
expect_exit "message without role" 1 "$INFERNO" template -m "$CONFIG" <"$tmp/req"
check "the error names the field" 'grep -q "messages\[0\].role: expected a string" "$tmp/err"'
printf '' >"$tmp/req"
expect_exit "empty stdin" 1 "$INFERNO" template -m "$CONFIG" <"$tmp/req"

finish
