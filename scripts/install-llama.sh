#!/bin/sh
# Installs llama.cpp, the engine inferno is measured against, and builds
# inferno's harness around it (bench/llama_bench.c) and its quantizer
# (bench/llama_quantize.c, beside it); prints the harness's path.
#
# llama.cpp comes prebuilt from the npm registry: @node-llama-cpp/linux-x64
# carries the CPU libraries (llama.cpp release v0.5.0, one libggml-cpu-*.so
# per x86-64 level, picked at run time), and node-llama-cpp carries the
# matching llama.cpp source as a git bundle, from which only the public
# headers (include/, ggml/include/) are taken. Everything lands in
# .deps/llama (git-ignored); a second run only rebuilds the harness.
#
#   sh scripts/install-llama.sh        # ~1 minute the first time (34 MB bundle)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.deps/llama"
VERSION=3.22.1
LIBS="$DEST/lib"
HEADERS="$DEST/include"
mkdir -p "$DEST"
trap 'rm -rf "$DEST"/fetch.* "$DEST/llama_bench.tmp" "$DEST/llama_quantize.tmp"' EXIT

if [ ! -f "$LIBS/libllama.v0.5.0.so" ]; then
    echo "install-llama: fetching @node-llama-cpp/linux-x64@$VERSION from npm" >&2
    work=$(mktemp -d "$DEST/fetch.XXXXXX")
    (cd "$work" && npm pack --silent "@node-llama-cpp/linux-x64@$VERSION" >/dev/null)
    tar xzf "$work/node-llama-cpp-linux-x64-$VERSION.tgz" -C "$work"
    rm -rf "$LIBS.tmp"
    mkdir -p "$LIBS.tmp"
    cp "$work"/package/bins/linux-x64/*.so "$LIBS.tmp/"
    rm -rf "$LIBS" "$work"
    mv "$LIBS.tmp" "$LIBS"
fi

if [ ! -f "$HEADERS/include/llama.h" ]; then
    echo "install-llama: fetching node-llama-cpp@$VERSION (llama.cpp headers) from npm" >&2
    work=$(mktemp -d "$DEST/fetch.XXXXXX")
    (cd "$work" && npm pack --silent "node-llama-cpp@$VERSION" >/dev/null)
    tar xzf "$work/node-llama-cpp-$VERSION.tgz" -C "$work" package/llama/gitRelease.bundle \
        package/llama/llama.cpp.info.json
    # a throw-away bare repository, outside inferno's own git tree
    git init -q --bare "$work/bundle.git"
    git -C "$work/bundle.git" fetch -q "$work/package/llama/gitRelease.bundle" HEAD
    rm -rf "$HEADERS.tmp"
    mkdir -p "$HEADERS.tmp"
    git -C "$work/bundle.git" archive FETCH_HEAD include ggml/include | tar x -C "$HEADERS.tmp"
    cp "$work/package/llama/llama.cpp.info.json" "$HEADERS.tmp/"
    rm -rf "$HEADERS" "$work"
    mv "$HEADERS.tmp" "$HEADERS"
fi

# The harness: our own program over llama.h; it finds the CPU backends in $LIBS.
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Werror \
    -I"$HEADERS/include" -I"$HEADERS/ggml/include" \
    -DLLAMA_LIBDIR="\"$LIBS\"" -o "$DEST/llama_bench.tmp" "$ROOT/bench/llama_bench.c" \
    -L"$LIBS" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
    -Wl,-rpath,"$LIBS" -lm
mv "$DEST/llama_bench.tmp" "$DEST/llama_bench"
# llama.cpp's quantizer (llama_model_quantize), for the quantized goldens:
# bench/llama_quantize.c, beside the harness.
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Werror \
    -I"$HEADERS/include" -I"$HEADERS/ggml/include" -o "$DEST/llama_quantize.tmp" "$ROOT/bench/llama_quantize.c" \
    -L"$LIBS" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$LIBS" -lm
mv "$DEST/llama_quantize.tmp" "$DEST/llama_quantize"
echo "$DEST/llama_bench"
