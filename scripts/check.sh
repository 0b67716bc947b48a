#!/bin/sh
# The whole test suite: builds inferno twice — optimized, and with
# AddressSanitizer + UndefinedBehaviorSanitizer — and runs every test in
# both builds; then the thread pool under ThreadSanitizer and the arm64
# kernels cross-built and run under qemu (scripts/check-arm64.sh; skipped
# without the cross tools). Ends with the combined "N passed, N failed" line.
set -u
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
TSAN_TESTS=${TSAN_TESTS:-test_pool test_threads}
pass=0
fail=0
for variant in plain san; do
    if [ "$variant" = san ]; then args="SAN=1"; build=build-san; else args=""; build=build; fi
    echo "== $variant build ($build)"
    if ! make -s -j"$JOBS" $args tests >/dev/null; then
        make -j1 $args tests 2>&1 | tail -n 30
        echo "build failed: $variant"
        fail=$((fail + 1))
        continue
    fi
    out=$(mktemp)
    BUILD=$build ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        sh scripts/run-tests.sh | tee "$out"
    line=$(tail -n 1 "$out")
    rm -f "$out"
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${f:-1}))
done
# The thread pool (and the threaded kernels that use it) under ThreadSanitizer.
echo "== tsan build (build-tsan)"
for t in $TSAN_TESTS; do
    if make -s -j"$JOBS" TSAN=1 "build-tsan/tests/$t" >/dev/null 2>&1; then
        line=$(TSAN_OPTIONS=halt_on_error=1 "build-tsan/tests/$t" 2>&1 | tail -n 1)
        echo "$t (tsan): $line"
        p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
        f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
        pass=$((pass + ${p:-0}))
        fail=$((fail + ${f:-1}))
    else
        echo "build failed: $t (tsan)"
        fail=$((fail + 1))
    fi
done
# The NEON kernels: an arm64 cross build under qemu-aarch64.
echo "== arm64 build (build-arm64, qemu)"
out=$(mktemp)
JOBS="$JOBS" sh scripts/check-arm64.sh | tee "$out"
line=$(tail -n 1 "$out")
rm -f "$out"
case "$line" in
skipped:*) ;;
*)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${f:-1}))
    ;;
esac
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
