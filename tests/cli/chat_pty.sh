#!/bin/sh
# The chat REPL in a terminal: `inferno chat` runs inside tmux (a private
# server) on a tiny synthetic model with the real Qwen3 tokenizer, and keys
# are sent to it. Checks: two turns answered at the libedit prompt, /reset
# restarting the conversation (the same seed answers the same again), Ctrl-C
# at the prompt, Ctrl-C during an answer (the answer stops, the session
# goes on), Ctrl-D exiting with status 0, thinking shown dimmed.
# Waits poll the screen with an upper bound; nothing depends on speed.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh
export TMUX_TMPDIR="$tmp"
T="tmux -L inferno-test -f /dev/null"
trap '$T kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
M="$tmp/tiny.gguf"
BIN=$(cd "$(dirname "$INFERNO")" && pwd)/$(basename "$INFERNO")

if ! command -v tmux >/dev/null; then
    echo "FAIL: tmux is not installed (sh scripts/install-deps.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi
if ! "$INFERNO" synth -o "$M" --layers 1 --embd 64 --heads 2 --kv-heads 1 --head-dim 32 --ff 128 >/dev/null 2>"$tmp/err"; then
    cat "$tmp/err"
    echo "0 passed, 1 failed"
    exit 1
fi

S=0 # the current tmux session: chat$S
screen() { $T capture-pane -p -J -S - -t chat$S | grep -v '^$'; }
# wait_for PATTERN [COUNT]: until the screen has COUNT lines matching PATTERN (grep -E); at most 30 s
wait_for() {
    n=0
    while [ "$(screen | grep -Ec -e "$1")" -lt "${2:-1}" ]; do
        n=$((n + 1))
        if [ $n -ge 300 ]; then return 1; fi
        sleep 0.1
    done
}
start() { # start ARGS...: chat in a fresh tmux window; its exit status goes to $tmp/rc
    rm -f "$tmp/rc"
    S=$((S + 1))
    $T new-session -d -s chat$S -x 160 -y 50 "$BIN chat -m $M $*; echo \$? >$tmp/rc; sleep 60"
    wait_for "^> $"
}
wait_exit() {
    n=0
    while [ ! -s "$tmp/rc" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
}

# --- two turns, Ctrl-C at the prompt, /reset, the first question again, Ctrl-D
start -n 8 --seed 7 --stats
check "banner on a terminal" 'screen | grep -q "^inferno chat: .*/help for commands, Ctrl-D to quit"'
$T send-keys -t chat$S "Hello" Enter
check "turn 1 answered" 'wait_for "^\[prompt .* reused from the cache" 1'
$T send-keys -t chat$S "How are you?" Enter
check "turn 2 answered" 'wait_for "^\[prompt .* reused from the cache" 2'
check "turn 2 reuses the cache" 'screen | grep "^\[prompt" | sed -n 2p | grep -Eq "tokens: [1-9][0-9]* reused"'
$T send-keys -t chat$S "half a line" C-c
$T send-keys -t chat$S "/help" Enter
check "Ctrl-C at the prompt drops the line: /help runs alone" 'wait_for "^/reset  /system TEXT" && [ "$(screen | grep -c "^\[prompt")" -eq 2 ]'
$T send-keys -t chat$S "/save $tmp/a.json" Enter
check "/save" 'wait_for "^\[saved 4 messages"'
$T send-keys -t chat$S "/reset" Enter
check "/reset" 'wait_for "^\[new conversation\]$"'
$T send-keys -t chat$S "Hello" Enter
check "turn after /reset answered" 'wait_for "^\[prompt .* reused from the cache" 3'
check "after /reset the prefix cache serves the repeat" 'screen | grep "^\[prompt" | sed -n 3p | grep -Eq "tokens: [1-9][0-9]* reused"'
$T send-keys -t chat$S "/save $tmp/b.json" Enter
wait_for "^\[saved 2 messages"
first_answer() { grep -A1 '"role":.*"assistant"' "$1" | sed -n 2p; }
check "after /reset the same seed answers the same" '[ -n "$(first_answer "$tmp/a.json")" ] && [ "$(first_answer "$tmp/a.json")" = "$(first_answer "$tmp/b.json")" ]'
$T send-keys -t chat$S Up
check "libedit history: Up recalls the last line" 'wait_for "^> /save $tmp/b.json$" 2'

$T send-keys -t chat$S C-u C-d
wait_exit
check "Ctrl-D exits with status 0" '[ "$(cat "$tmp/rc" 2>/dev/null)" = 0 ]'

# --- Ctrl-C during an answer (end-of-turn banned, no length limit): the
# answer stops, the conversation goes on
start -c 4096 -l 151643-inf -l 151645-inf --seed 1 --stats
$T send-keys -t chat$S "Tell me a long story" Enter
sleep 0.5
$T send-keys -t chat$S C-c
check "Ctrl-C during an answer: interrupted" 'wait_for "^\[interrupted\]$"'
check "the answer stopped early" 'wait_for "^\[prompt .* \| interrupt\]$"'
check "and a new prompt" 'wait_for "^> $"'
$T send-keys -t chat$S "And then?" Enter
sleep 0.5
$T send-keys -t chat$S C-c
check "the next turn keeps the conversation" 'wait_for "^\[prompt .* \| interrupt\]$" 2 && screen | grep "^\[prompt" | sed -n 2p | grep -Eq "tokens: [1-9][0-9]* reused"'
$T send-keys -t chat$S C-d
wait_exit
check "Ctrl-D exits with status 0" '[ "$(cat "$tmp/rc" 2>/dev/null)" = 0 ]'

# --- thinking is shown dimmed on a terminal (a bias forces <think> tokens)
start -n 3 -l 151667+100 --stats
$T send-keys -t chat$S "Hi" Enter
wait_for "^\[prompt"
esc=$(printf '\033')
check "thinking dimmed (ESC[2m)" '$T capture-pane -p -e -t chat$S | grep -q "${esc}\[2m<think><think><think>"'
$T send-keys -t chat$S C-d
wait_exit

finish
