#!/bin/sh
# Builds llama.cpp's llama-server, the server inferno serve is measured
# against (scripts/bench-serve.sh), from the llama.cpp source that ships in
# the node-llama-cpp npm package as a git bundle (the same release as the
# libllama of scripts/install-llama.sh). The build is cached outside the
# repository, in ${XDG_CACHE_HOME:-~/.cache}/inferno/llama-server; a second
# run only prints the binary's path.
#
#   sh scripts/build-llama-server.sh     # ~15 minutes on 2 cores the first time
#
# GGML_NATIVE stays off: this release's native AMX matmul dies with SIGILL on
# AMX machines; the AVX-512 flags below match what both vendors' CPUs here have.
set -eu
VERSION=3.22.1
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/inferno/llama-server"
BIN="$CACHE/build/bin/llama-server"
if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi
mkdir -p "$CACHE"
if [ ! -f "$CACHE/src/CMakeLists.txt" ]; then
    echo "build-llama-server: fetching node-llama-cpp@$VERSION (llama.cpp source) from npm" >&2
    work=$(mktemp -d "$CACHE/fetch.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && npm pack --silent "node-llama-cpp@$VERSION" >/dev/null)
    tar xzf "$work/node-llama-cpp-$VERSION.tgz" -C "$work" package/llama/gitRelease.bundle
    rm -rf "$CACHE/src"
    git -c advice.detachedHead=false clone -q "$work/package/llama/gitRelease.bundle" "$CACHE/src"
fi
echo "build-llama-server: building (about 15 minutes on 2 cores)" >&2
cmake -S "$CACHE/src" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
    -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
    -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON >"$CACHE/cmake.log" 2>&1
cmake --build "$CACHE/build" --target llama-server -j "${JOBS:-2}" >"$CACHE/build.log" 2>&1
echo "$BIN"
