#!/bin/sh
# Runs every test program in $BUILD/tests and every CLI test script in
# tests/cli/, then prints the totals as "N passed, N failed".
# Each program/script ends its output with its own "N passed, N failed" line.
#
# TEST_JOBS tests run at once (default: the CPUs; most tests use one
# core, and the suite's time is what CI waits for), each claiming the next
# one not yet taken (the longest first), their results printed in the
# usual order once all are done. The server tests (serve.sh), whose
# assertions have time limits, run afterwards on their own.
BUILD=${BUILD:-build}
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
export INFERNO="$BUILD/inferno"
SOLO="tests/cli/serve.sh"
# claimed first: these take a minute or more, the rest seconds
LONG_FIRST="tests/cli/golden_isa.sh $BUILD/tests/test_kernels $BUILD/tests/test_engine $BUILD/tests/test_model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# every test, in the order the results are printed
: >"$work/all"
for t in "$BUILD"/tests/test_* tests/cli/*.sh; do
    [ -e "$t" ] || continue
    [ "$t" = tests/cli/lib.sh ] && continue
    case "$t" in *.d|*.o) continue ;; esac
    echo "$t" >>"$work/all"
done
# the order they are claimed in
{
    for t in $LONG_FIRST; do grep -qxF "$t" "$work/all" && echo "$t"; done
    grep -vxF -e "$SOLO" $(for t in $LONG_FIRST; do printf -- '-e %s ' "$t"; done) "$work/all"
} >"$work/queue"

# Runs test $1 into $work/N.{log,rc,secs}, N its line in $work/all.
run_one() {
    n=$(grep -nxF "$1" "$work/all" | cut -d: -f1)
    start=$(date +%s)
    case "$1" in
        *.sh) sh "$1" >"$work/$n.log" 2>&1 ;;
        *) "$1" >"$work/$n.log" 2>&1 ;;
    esac
    echo $? >"$work/$n.rc"
    echo $(($(date +%s) - start)) >"$work/$n.secs"
}

# One worker: takes each queued test whose claim (an atomic mkdir) it wins.
worker() {
    while read -r t; do
        mkdir "$work/claim-$(echo "$t" | tr / _)" 2>/dev/null || continue
        run_one "$t"
    done <"$work/queue"
}

i=0
while [ $i -lt "$JOBS" ]; do
    worker &
    i=$((i + 1))
done
wait
for t in $SOLO; do grep -qxF "$t" "$work/all" && run_one "$t"; done

total_pass=0
total_fail=0
failed_programs=""
n=0
while read -r t; do
    n=$((n + 1))
    log="$work/$n.log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    p=${p:-0}; f=${f:-0}
    if [ "$(cat "$work/$n.rc")" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    printf '%-44s %5s passed %3s failed  %3ss\n' "$(basename "$t")" "$p" "$f" "$(cat "$work/$n.secs")"
    if [ "$f" -ne 0 ]; then
        failed_programs="$failed_programs $(basename "$t")"
        grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 40 | sed 's/^/    /'
    fi
done <"$work/all"
[ -z "$failed_programs" ] || echo "failing:$failed_programs"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
