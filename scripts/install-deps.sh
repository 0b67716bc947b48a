#!/bin/sh
# Installs what building and testing inferno needs on a Debian machine
# (compiler, make, cJSON, utf8proc, libedit; tmux drives the chat test; an
# arm64 cross compiler and qemu-user run the NEON kernels' tests,
# scripts/check-arm64.sh), skipping what is already there.
set -eu
PKGS="gcc make libc6-dev libcjson-dev libutf8proc-dev libedit-dev tmux"
PKGS="$PKGS gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing:$missing" >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
