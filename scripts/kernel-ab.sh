#!/bin/sh
# A/B of this tree's AVX-512 decode kernels against another revision's, in
# one process (bench/kernel_ab.c says how): builds REV's matmul_avx512.c and
# quant_avx512.c with this Makefile's flags, renames their global symbols
# old_*, links them with this tree's library into build/kernel_ab, runs it.
# Needs git, nm and objcopy, and a CPU with AVX-512 VNNI. Not a test.
#
#   sh scripts/kernel-ab.sh REV MODEL.gguf [PASSES] [HINT]
#
#   REV     the other revision (a commit, tag or branch; HEAD: the last
#           commit against the working tree's changes)
#   PASSES  passes of one token's layer products, alternating builds
#           (default 100)
#   HINT    0 or 1: the weights' prefetch hint, L2 or NTA, for both
#           (default: the CPU's initial one)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[ $# -ge 2 ] || { echo "usage: sh scripts/kernel-ab.sh REV MODEL.gguf [PASSES] [HINT]" >&2; exit 2; }
rev=$1
shift
make -s build/libinferno.a
# The value of Make expression $1 in this Makefile.
make_value() { printf 'kernel-ab-value:\n\t@echo %s\n' "$1" | make -s -f Makefile -f - kernel-ab-value; }
# shellcheck disable=SC2016 # Make's expressions, not the shell's
cc=$(make_value '$(CC)') kernel_flags=$(make_value '$(KERNEL_CFLAGS) $(AVX512_FLAGS)') cflags=$(make_value '$(ALL_CFLAGS)')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" src include | tar -x -C "$tmp"
for f in matmul_avx512 quant_avx512; do
    # shellcheck disable=SC2086 # flags are words
    (cd "$tmp" && $cc $kernel_flags -c -o "$f.o" "src/backend/x86/$f.c")
done
nm --defined-only -g --format=posix "$tmp/matmul_avx512.o" "$tmp/quant_avx512.o" |
    awk 'NF >= 2 && $1 !~ /:$/ { print $1 " old_" $1 }' | sort -u >"$tmp/renames"
for f in matmul_avx512 quant_avx512; do
    objcopy --redefine-syms="$tmp/renames" "$tmp/$f.o" "$tmp/old_$f.o"
done
# shellcheck disable=SC2086
$cc $cflags -o build/kernel_ab bench/kernel_ab.c "$tmp/old_matmul_avx512.o" "$tmp/old_quant_avx512.o" \
    build/libinferno.a -lcjson -lutf8proc -ledit -lpthread -lm
build/kernel_ab "$@"
