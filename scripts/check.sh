#!/bin/sh
# The whole test suite (`make check`; CI runs it): builds inferno twice with
# gcc — optimized, and with AddressSanitizer + UndefinedBehaviorSanitizer —
# and runs every test in both builds; then the thread pool under
# ThreadSanitizer; a clang build of everything (-Werror, as every build)
# and its kernel-level tests; the arm64 kernels cross-built and run under
# qemu (scripts/check-arm64.sh; it fails when the cross tools are missing:
# scripts/install-deps.sh installs them); and every fuzz target for a
# bounded number of inputs (scripts/fuzz.sh --runs). Ends with each step's
# wall and CPU time and the combined "N passed, N failed" line.
#
# Two lanes: the gcc builds (plain, then sanitizers) run in this process;
# the other steps (tsan, clang, arm64, fuzz) run at the same time in a
# second process at nice 10, which takes the cores the first lane leaves
# idle (its single-threaded test runs, serve.sh's waits, the builds' last
# links) and gives way elsewhere. Its output is printed after the first
# lane's, so the log reads as if the steps ran in turn.
#
#   sh scripts/check.sh [--steps "STEP..."]   STEP: plain san tsan clang arm64 fuzz
#   (--steps runs only those, in order, in this process: one lane)
#
# Knobs: JOBS (parallel compiles; all cores), TSAN_TESTS, CLANG_TESTS,
# FUZZ_RUNS and FUZZ_SECONDS (inputs and seconds at most per fuzz target).
set -u
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
TSAN_TESTS=${TSAN_TESTS:-test_pool test_threads test_engine}
CLANG_TESTS=${CLANG_TESTS:-test_kernels test_ops test_pool}
FUZZ_RUNS=${FUZZ_RUNS:-10000}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
pass=0
fail=0
times=""
log=$(mktemp)
lane2_pid=""
trap '[ -n "$lane2_pid" ] && kill "$lane2_pid" 2>/dev/null; rm -f "$log" "$log".*' EXIT
trap 'exit 130' INT TERM
start_all=$(date +%s)
steps=""
usage() { echo "check.sh: $1 (usage: sh scripts/check.sh [--steps \"STEP...\"], STEP: plain san tsan clang arm64 fuzz)" >&2; exit 2; }
case "${1:-}" in
    --steps) steps=${2:-}; [ -n "$steps" ] || usage "--steps needs a list of steps" ;;
    "") ;;
    *) usage "unknown argument '$1'" ;;
esac
for name in $steps; do
    case "$name" in plain|san|tsan|clang|arm64|fuzz) ;; *) usage "unknown step '$name'" ;; esac
done
lane2=""
if [ -z "$steps" ]; then # both lanes: the second in the background
    steps="plain san"
    lane2="$log.lane2"
    nice -n 10 sh "$self" --steps "tsan clang arm64 fuzz" >"$lane2" 2>&1 &
    lane2_pid=$!
fi
wants() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

# Adds the "N passed, N failed" of line $1 to the totals; a line without
# it (a program that crashed) counts as one failure.
add_totals() {
    p=$(echo "$1" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$1" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${f:-1}))
}

# Builds targets with make (quietly; on failure again on one job, to show
# the first errors) and counts a failure. Usage: build NAME make-args...
build() {
    name=$1
    shift
    if ! $MAKE -s -j"$JOBS" "$@" >/dev/null; then
        $MAKE -j1 "$@" 2>&1 | tail -n 30
        echo "build failed: $name"
        fail=$((fail + 1))
        return 1
    fi
}

# Runs a command whose output ends with "N passed, N failed", shows that
# output and adds its totals.
counted() {
    "$@" 2>&1 | tee "$log"
    add_totals "$(tail -n 1 "$log")"
}

# CPU seconds (user + system) of this shell's finished children so far
# (`times` in this shell, not in a command substitution's subshell).
cpu_s() {
    times >"$log.times"
    awk 'END { s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } printf "%d", s }' "$log.times"
}
step_start() {
    echo "== $1"
    step=$1
    t0=$(date +%s)
    cpu_s >"$log.c0"
}
step_end() {
    cpu_s >"$log.c1"
    times="$times$(printf '%-40s %4ss  (%ss of CPU)' "$step" $(($(date +%s) - t0)) $(($(cat "$log.c1") - $(cat "$log.c0"))))
"
}

for variant in plain san; do
    wants $variant || continue
    # the sanitizer build's golden_isa.sh runs no x86 ISA (only checks that
    # an unsupported one is refused): test_golden itself runs the default
    # ISA there, and test_kernels every ISA's kernels at ragged sizes; the
    # plain build checks every ISA against llama.cpp at 1, 2 and 3 threads
    isas="ref avx2 avx512 avx512+amx neon"
    if [ "$variant" = san ]; then args="SAN=1"; build=build-san; isa_threads=3; isas="neon"
    else args=""; build=build; isa_threads="1 2 3"; fi
    step_start "$variant build ($build)"
    if build "$variant" $args tests; then
        counted env BUILD=$build GOLDEN_ISA_THREADS="$isa_threads" GOLDEN_ISA_LIST="$isas" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
            sh scripts/run-tests.sh
    fi
    step_end
done

# The thread pool (and the threaded kernels that use it) under ThreadSanitizer.
if wants tsan; then
    step_start "tsan build (build-tsan)"
    for t in $TSAN_TESTS; do
        if build "$t (tsan)" TSAN=1 "build-tsan/tests/$t"; then
            line=$(TSAN_OPTIONS=halt_on_error=1 "build-tsan/tests/$t" 2>&1 | tail -n 1)
            echo "$t (tsan): $line"
            add_totals "$line"
        fi
    done
    # the matmuls on this CPU's kernels, whose threads claim and steal rows
    if build "test_kernels (tsan)" TSAN=1 build-tsan/tests/test_kernels; then
        line=$(TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_kernels --isa best --ops matmul 2>&1 | tail -n 1)
        echo "test_kernels --isa best --ops matmul (tsan): $line"
        add_totals "$line"
    fi
    step_end
fi

# A second compiler: clang builds the library, the CLI and every test with
# -Werror; the kernel-level tests hold its code to the scalar reference.
if wants clang; then
    step_start "clang build (build-clang)"
    if ! command -v clang >/dev/null 2>&1; then
        echo "clang not found (sh scripts/install-deps.sh installs it)"
        fail=$((fail + 1))
    elif build clang CC=clang BUILD=build-clang tests; then
        for t in $CLANG_TESTS; do
            line=$("build-clang/tests/$t" 2>&1 | tee "$log" | tail -n 1)
            echo "$t (clang): $line"
            case "$line" in *" 0 failed") ;; *) grep '^FAIL' "$log" | head -n 20 ;; esac
            add_totals "$line"
        done
    fi
    step_end
fi

# The NEON kernels: an arm64 cross build under qemu-aarch64.
if wants arm64; then
    step_start "arm64 build (build-arm64, qemu)"
    counted env JOBS="$JOBS" sh scripts/check-arm64.sh
    step_end
fi

# Every fuzz target, briefly: its seeds, then FUZZ_RUNS generated inputs.
if wants fuzz; then
    step_start "fuzz targets (build-fuzz, $FUZZ_RUNS runs)"
    counted env JOBS="$JOBS" sh scripts/fuzz.sh --runs "$FUZZ_RUNS" "$FUZZ_SECONDS"
    step_end
fi

# The second lane's log, then its step times and totals (its last lines:
# the times, then "N passed, N failed") with this lane's.
if [ -n "$lane2" ]; then
    wait "$lane2_pid"
    lane2_pid=""
    echo "== second lane (nice 10, beside the steps above)"
    n=$(grep -n -m 1 -E '^(tsan|clang|arm64|fuzz) .*s of CPU\)$' "$lane2" | cut -d: -f1)
    if [ -n "$n" ]; then
        head -n $((n - 1)) "$lane2"
        times="$times$(tail -n +"$n" "$lane2" | grep -E 's of CPU\)$')
"
    else
        cat "$lane2"
    fi
    add_totals "$(tail -n 1 "$lane2")"
fi
printf '%s' "$times"
[ -n "$lane2" ] && printf '%-40s %4ss\n' "all (both lanes)" $(($(date +%s) - start_all))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
