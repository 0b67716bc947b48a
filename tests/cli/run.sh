#!/bin/sh
# CLI test of `inferno run` on a tiny synthetic model (1 layer, hidden 64,
# the real Qwen3 vocabulary and chat template; written in a temp folder):
# greedy by default, seeds reproducible across thread counts, --json, stop
# strings across token boundaries, --chat / --system / --no-think, prompts
# from -f and stdin, end-of-turn and context-full stops, Ctrl-C (SIGINT)
# ending generation with the timings line and exit status 130.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
M="$tmp/tiny.gguf"

run() { timeout 60 "$INFERNO" run -m "$M" "$@"; }

if ! "$INFERNO" synth -o "$M" --layers 1 --embd 64 --heads 2 --kv-heads 1 --head-dim 32 --ff 128 >/dev/null 2>"$tmp/err"; then
    cat "$tmp/err"
    echo "0 passed, 1 failed"
    exit 1
fi

check "--help: usage on stdout, exit 0" '"$INFERNO" run --help >"$tmp/help" && grep -q "^usage: inferno run" "$tmp/help"'
check "--help states the sampling order" 'grep -q "logit bias, penalties, top-k, top-p, min-p" "$tmp/help"'
check "--help states the default decoding" 'grep -q "greedy (argmax, temperature 0) by default" "$tmp/help"'

# greedy by default: the same as --temp 0, for text and for ids
run -p "The quick brown fox" -n 12 >"$tmp/greedy" 2>/dev/null
run -p "The quick brown fox" -n 12 --temp 0 --seed 9 >"$tmp/temp0" 2>/dev/null
check "default decoding is greedy (= --temp 0)" 'cmp -s "$tmp/greedy" "$tmp/temp0" && [ -s "$tmp/greedy" ]'
run --tokens 785,3974,13876,38835 --ids -n 8 >"$tmp/ids" 2>/dev/null
run --tokens 785,3974,13876,38835 --ids -n 8 --temp 0 >"$tmp/ids0" 2>/dev/null
check "--ids: a JSON array of 8 ids" 'grep -Eq "^\[[0-9]+(, [0-9]+){7}\]$" "$tmp/ids"'
check "--ids greedy = --temp 0" 'cmp -s "$tmp/ids" "$tmp/ids0"'

# KV cache types: q8_0 runs (head_dim 32 holds one Q8_0 block per row), the
# same greedy ids on 1 and 2 threads
run --tokens 785,3974,13876,38835 --ids -n 8 --kv-type q8_0 -t 1 >"$tmp/q8a" 2>/dev/null
run --tokens 785,3974,13876,38835 --ids -n 8 --kv-type q8_0 -t 2 >"$tmp/q8b" 2>/dev/null
check "--kv-type q8_0: 8 ids" 'grep -Eq "^\[[0-9]+(, [0-9]+){7}\]$" "$tmp/q8a"'
check "--kv-type q8_0: the same ids on 1 and 2 threads" 'cmp -s "$tmp/q8a" "$tmp/q8b"'

# seeds: the same seed gives the same text on 1 and 2 threads; another seed differs
run -p "Once upon a time" -n 16 --seed 42 -t 1 >"$tmp/s1" 2>/dev/null
run -p "Once upon a time" -n 16 --seed 42 -t 2 >"$tmp/s2" 2>/dev/null
run -p "Once upon a time" -n 16 --seed 43 -t 2 >"$tmp/s3" 2>/dev/null
check "--seed 42: same output on 1 and 2 threads" 'cmp -s "$tmp/s1" "$tmp/s2" && [ -s "$tmp/s1" ]'
check "--seed 43 gives other output" '! cmp -s "$tmp/s1" "$tmp/s3"'
check "sampling differs from greedy" '! cmp -s "$tmp/s1" "$tmp/greedy"'

# --json: one object, stable fields, nothing on stderr
run -p "Once upon a time" -n 5 --seed 42 --json >"$tmp/json" 2>"$tmp/err"
check "--json: one line" '[ "$(wc -l <"$tmp/json")" -eq 1 ]'
check "--json: nothing on stderr" '[ ! -s "$tmp/err" ]'
for field in '"text":"' '"tokens":\[' '"stop_reason":"length"' '"prompt_tokens":4' '"generated_tokens":5' '"seed":42' \
    '"timings":{"load_ms":[0-9.]*,"prefill_ms":[0-9.]*,"prefill_tok_s":[0-9.]*,"decode_ms":[0-9.]*,"decode_tok_s":[0-9.]*}'; do
    check "--json has $field" 'grep -q "$field" "$tmp/json"'
done
check "--json: 5 token ids" 'grep -Eq "\"tokens\":\[[0-9]+(,[0-9]+){4}\]" "$tmp/json"'

# a stop string made of two generated tokens: matched across the boundary,
# the text before it printed, the stop string not
run --tokens 785,3974,13876,38835 --ids -n 12 >"$tmp/ids12" 2>/dev/null
ids=$(tr -d '[] ' <"$tmp/ids12")
pair=$(echo "$ids" | cut -d, -f6,7)
"$INFERNO" detokenize -m "$M" "$pair" >"$tmp/stop"
stop=$(cat "$tmp/stop")
run --tokens 785,3974,13876,38835 -n 12 >"$tmp/full" 2>/dev/null
full=$(cat "$tmp/full")
want=${full%%"$stop"*}
run --tokens 785,3974,13876,38835 -n 12 --stop "$stop" >"$tmp/stopped" 2>/dev/null
check "a stop string across tokens cuts the text before it" '[ -n "$stop" ] && [ "$(cat "$tmp/stopped")" = "$want" ] && [ "$want" != "$full" ]'
run --tokens 785,3974,13876,38835 -n 12 --stop "$stop" --json >"$tmp/sj" 2>/dev/null
check "--json: stop_reason stop" 'grep -q "\"stop_reason\":\"stop\"" "$tmp/sj"'
check "--stop that never matches changes nothing" '[ "$(run --tokens 785,3974,13876,38835 -n 12 --stop "no such text" 2>/dev/null)" = "$full" ]'

# --chat: the prompt is the rendered template; --no-think adds the empty think block
printf '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi there"}],"add_generation_prompt":true}' |
    "$INFERNO" template -m "$M" | "$INFERNO" tokenize -m "$M" | tr ',' '\n' | wc -l >"$tmp/n_chat"
run --chat --system "Be brief." -p "Hi there" -n 3 --json >"$tmp/chat" 2>/dev/null
check "--chat --system: prompt_tokens = the rendered template" 'grep -q "\"prompt_tokens\":$(cat "$tmp/n_chat")," "$tmp/chat"'
check "--chat samples (a seed is reported)" 'grep -q "\"seed\":" "$tmp/chat"'
run --chat --system "Be brief." -p "Hi there" -n 3 --json --no-think >"$tmp/chat_nt" 2>/dev/null
check "--no-think: 4 more prompt tokens (<think>\\n\\n</think>\\n\\n)" 'grep -q "\"prompt_tokens\":$(($(cat "$tmp/n_chat") + 4))," "$tmp/chat_nt"'

# prompt sources: -f FILE, -f -, stdin
printf 'The quick brown fox' >"$tmp/prompt.txt"
check "-f FILE = -p" '[ "$(run -f "$tmp/prompt.txt" -n 12 2>/dev/null)" = "$(cat "$tmp/greedy")" ]'
check "stdin = -p" '[ "$(run -n 12 <"$tmp/prompt.txt" 2>/dev/null)" = "$(cat "$tmp/greedy")" ]'
check "-f - = -p" '[ "$(run -f - -n 12 <"$tmp/prompt.txt" 2>/dev/null)" = "$(cat "$tmp/greedy")" ]'

# stops: end-of-turn (forced by a logit bias on <|im_end|>), -n 0, a full context
run -p "Hi" -n 5 --logit-bias 151645+100 --json >"$tmp/eog" 2>/dev/null
check "end-of-turn: stop_reason eog, no tokens, no text" 'grep -q "\"text\":\"\",\"tokens\":\[\],\"stop_reason\":\"eog\"" "$tmp/eog"'
run -p "Hi" -n 5 --logit-bias 151645+100 --ignore-eos --ids >"$tmp/noeos" 2>/dev/null
check "--ignore-eos keeps going through <|im_end|>" 'grep -q "^\[151645, 151645, 151645, 151645, 151645\]$" "$tmp/noeos"'
check "-n 0 prints an empty line" '[ "$(run -p "Hi" -n 0 2>/dev/null | wc -c)" -eq 1 ]'
run -p "Hi" -c 8 -n 50 >"$tmp/full_out" 2>"$tmp/full_err"
rc=$?
check "context full: exit 0" '[ $rc -eq 0 ]'
check "context full: a clear message" 'grep -q "the context (8 tokens) is full" "$tmp/full_err"'
check "context full: the timings line" 'grep -q "^prompt 1 tokens .* (8 tokens)$" "$tmp/full_err"'

# Ctrl-C: SIGINT during generation ends it cleanly (text, timings, 130)
"$INFERNO" run -m "$M" -p "Tell me a story" -n -1 -c 4096 -l 151643-inf -l 151645-inf --seed 1 >"$tmp/int_out" 2>"$tmp/int_err" &
pid=$!
n=0
while [ ! -s "$tmp/int_out" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
kill -INT $pid
wait $pid
rc=$?
check "Ctrl-C: exit status 130" '[ $rc -eq 130 ]'
check "Ctrl-C: the text so far" '[ -s "$tmp/int_out" ]'
check "Ctrl-C: says interrupted" 'grep -q "inferno run: interrupted" "$tmp/int_err"'
check "Ctrl-C: the timings line" 'grep -q "^prompt 4 tokens | first token" "$tmp/int_err"'

finish
