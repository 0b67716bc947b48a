#!/bin/sh
# `inferno serve` end to end: the official openai and @anthropic-ai/sdk npm
# clients, raw HTTP (every error status, slow and vanishing clients), 16
# concurrent streams against the same requests run alone, a bounded load
# test, and graceful shutdown. Each tests/server/*.mjs starts its own
# servers on free loopback ports and prints "N passed, N failed"; this
# script sums them. Every server must exit 0 on SIGTERM (under ASan a leak
# report makes that nonzero).
#
# The clients are installed on first use into .deps/server-clients (npm, from
# tests/server/package.json and its lock file). A tiny synthetic model is
# written to a temp dir. Under a sanitizer build (build-san) the load test
# is scaled down. The load test runs beside the others (two lanes): about
# 50 s in the plain build, 2 min under ASan (2 cores, Zen 3).
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
# SERVE_SCRIPTS="concurrent shutdown" runs only those scripts (the
# ThreadSanitizer step of scripts/check.sh does).
. tests/cli/lib.sh
DEPS=.deps/server-clients

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    bad "node and npm are needed (Node 20 or later)"
    finish
fi
# (re)install when the package files changed
if ! cmp -s tests/server/package.json "$DEPS/package.json" || ! cmp -s tests/server/package-lock.json "$DEPS/package-lock.json" ||
    [ ! -d "$DEPS/node_modules/openai" ] || [ ! -d "$DEPS/node_modules/@anthropic-ai/sdk" ]; then
    mkdir -p "$DEPS"
    cp tests/server/package.json tests/server/package-lock.json "$DEPS/"
    if ! (cd "$DEPS" && npm install --silent --no-audit --no-fund >npm.log 2>&1); then
        bad "npm install of the test clients failed"
        tail -n 20 "$DEPS/npm.log"
        finish
    fi
fi

if ! "$INFERNO" synth -o "$tmp/tiny.gguf" --layers 2 --embd 128 --ff 256 --heads 4 --kv-heads 2 --head-dim 32 \
    --ctx 4096 --name tiny-test >"$tmp/synth.log" 2>&1; then
    bad "inferno synth"
    cat "$tmp/synth.log"
    finish
fi

case "$INFERNO" in *build-san*|*build-tsan*) san=1 ;; *) san=0 ;; esac
export INFERNO INFERNO_TEST_MODEL="$tmp/tiny.gguf" INFERNO_TEST_DEPS="$DEPS" INFERNO_TEST_SAN=$san
# leaks make the server's exit status nonzero, which the scripts check
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"

# Runs tests/server/$1.mjs into $tmp/$1.{log,rc,secs}.
run_script() {
    start=$(date +%s)
    timeout 600 node "tests/server/$1.mjs" >"$tmp/$1.log" 2>&1
    echo $? >"$tmp/$1.rc"
    echo $(($(date +%s) - start)) >"$tmp/$1.secs"
}

# Two lanes, as each server runs its engine on one thread (-t 1): the load
# test (the longest) on one, the other scripts one after another on the
# other; the results are then printed in name order.
names=""
for script in tests/server/*.mjs; do
    name=$(basename "$script" .mjs)
    [ "$name" = lib ] && continue
    case " ${SERVE_SCRIPTS:-$name} " in *" $name "*) names="$names $name" ;; esac
done
case " $names " in *" load "*) run_script load & ;; esac
for name in $names; do
    [ "$name" = load ] || run_script "$name"
done
wait

for name in $names; do
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/$name.log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    p=${p:-0}
    f=${f:-0}
    if [ "$(cat "$tmp/$name.rc")" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p))
    fail=$((fail + f))
    echo "$name: $p passed, $f failed ($(cat "$tmp/$name.secs") s)"
    if [ "$f" -ne 0 ]; then
        grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/$name.log" | tail -n 40 | sed 's/^/    /'
    fi
done
finish
