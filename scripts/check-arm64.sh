#!/bin/sh
# The arm64 kernels without arm64 hardware: cross-builds the core and the
# backend (make kernel-tests, in build-arm64/) with aarch64-linux-gnu-gcc
# and runs the kernel-level tests under qemu-aarch64 — test_kernels twice,
# on an emulated Cortex-A57 (ARMv8.0: the plain NEON matvecs, and proof
# that the binary runs without ARMv8.2) and on qemu's "max" CPU (with the
# dot product: the SDOT matvecs). Ends with the combined "N passed, N failed"
# line; exits 0 only when everything passed. Without the cross tools it
# fails, naming what is missing (scripts/install-deps.sh installs them:
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user).
set -u
cd "$(dirname "$0")/.."
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-qemu-aarch64}
SYSROOT=${SYSROOT:-/usr/aarch64-linux-gnu}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
BUILD=build-arm64

missing() { # what, package
    echo "check-arm64.sh: $1 (package $2; sh scripts/install-deps.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
}
command -v "$CROSS_CC" >/dev/null 2>&1 || missing "$CROSS_CC not found" gcc-aarch64-linux-gnu
command -v "$QEMU" >/dev/null 2>&1 || missing "$QEMU not found" qemu-user
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || missing "no arm64 libc in $SYSROOT" libc6-dev-arm64-cross

if ! make -s -j"$JOBS" CC="$CROSS_CC" BUILD=$BUILD kernel-tests >/dev/null; then
    make -j1 CC="$CROSS_CC" BUILD=$BUILD kernel-tests 2>&1 | tail -n 30
    echo "build failed: arm64"
    echo "0 passed, 1 failed"
    exit 1
fi

pass=0
fail=0
out=$(mktemp)
# The emulated CPU, the test, its arguments. test_kernels holds the neon
# kernels to ref.c: the ops that have them (attention on neon is ref.c's,
# threaded as on the native builds' "ref" ISA, which those test); on the
# Cortex-A57 only the matrix products, the part of the table that differs
# without SDOT.
for run in "cortex-a57 test_kernels --isa neon --ops matmul" "max test_kernels --isa neon --ops matmul,elementwise,kv_store" \
    "max test_ops" "max test_pool"; do
    set -- $run
    cpu=$1
    test=$2
    shift 2
    start=$(date +%s)
    "$QEMU" -cpu "$cpu" -L "$SYSROOT" "$BUILD/kernel-tests/$test" "$@" >"$out" 2>&1
    line=$(tail -n 1 "$out")
    echo "$test $* (arm64, qemu -cpu $cpu, $(($(date +%s) - start)) s): $line"
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    [ "${f:-1}" -eq 0 ] || { grep '^FAIL' "$out" | head -n 20; tail -n 3 "$out"; }
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${f:-1}))
done
rm -f "$out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
