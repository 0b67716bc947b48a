# lib.sh — what every CLI test script shares. Source it from the repo root:
#   . tests/cli/lib.sh
# It sets $INFERNO (the binary; scripts/run-tests.sh exports it), a scratch
# folder $tmp removed at exit, the counters and:
#   ok / bad MSG          count a pass / a failure (printed)
#   check MSG 'COMMAND'   ok when the eval'ed command succeeds
#   finish                print "N passed, N failed" and exit non-zero on failure
INFERNO=${INFERNO:-build/inferno}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}
