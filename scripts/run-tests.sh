#!/bin/sh
# Runs every test program in $BUILD/tests and every CLI test script in
# tests/cli/, then prints the totals as "N passed, N failed".
# Each program/script ends its output with its own "N passed, N failed" line.
BUILD=${BUILD:-build}
export INFERNO="$BUILD/inferno"
total_pass=0
total_fail=0
failed_programs=""
log=$(mktemp)
for t in "$BUILD"/tests/test_* tests/cli/*.sh; do
    [ -e "$t" ] || continue
    [ "$t" = tests/cli/lib.sh ] && continue
    case "$t" in *.d|*.o) continue ;; esac
    start=$(date +%s)
    case "$t" in
        *.sh) sh "$t" >"$log" 2>&1 ;;
        *) "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    secs=$(( $(date +%s) - start ))
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    p=${p:-0}; f=${f:-0}
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    printf '%-44s %5s passed %3s failed  %3ss\n' "$(basename "$t")" "$p" "$f" "$secs"
    if [ "$f" -ne 0 ]; then
        failed_programs="$failed_programs $(basename "$t")"
        grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 40 | sed 's/^/    /'
    fi
done
rm -f "$log"
[ -z "$failed_programs" ] || echo "failing:$failed_programs"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
