#!/bin/sh
# Installs what building and testing inferno needs on a Debian machine
# (compiler, make, cJSON, utf8proc, libedit, libmicrohttpd for the server,
# libcurl for `inferno pull`;
# tmux drives the chat test; clang for the second compiler's build and the fuzz targets, with its
# sanitizer and libFuzzer runtimes; python3 makes the tokenizer fuzz seeds;
# an arm64 cross compiler and qemu-user run the NEON kernels' tests,
# scripts/check-arm64.sh), skipping what is already there.
set -eu
PKGS="gcc make libc6-dev libcjson-dev libutf8proc-dev libedit-dev libmicrohttpd-dev libcurl4-openssl-dev tmux python3"
PKGS="$PKGS clang"
PKGS="$PKGS gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
updated=0
install() { # packages...
    missing=""
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "installing:$missing" >&2
    [ "$updated" = 1 ] || { $SUDO apt-get update -qq >/dev/null; updated=1; }
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
}
install $PKGS
# libFuzzer and the sanitizer runtimes are only a Recommends of Debian's
# clang, and their package is named after clang's major version.
install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
