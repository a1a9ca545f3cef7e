#!/bin/sh
# ggml_setup.sh -- builds the ggml peer benchmark (bench/x86/ggml_peer.c): llama.cpp's ggml CPU
# matmul beside mplinear's kernel in one process.
#
#   1. downloads the llama-cpp-python 0.3.36 source distribution from PyPI into $PEERS/dl
#      (its vendor/llama.cpp is the llama.cpp the package ships),
#   2. unpacks it into $PEERS/llama_cpp_python-0.3.36,
#   3. builds only the ggml and ggml-cpu targets (Release, GGML_NATIVE=ON, shared libraries) in
#      $PEERS/build-ggml,
#   4. compiles bench/x86/ggml_peer.c against that ggml (rpath to its libraries) and the static
#      mplinear library of $MPL_BUILD, into $PEERS/ggml_peer.
#
# Every step is skipped when its result is already there (the compile when the binary is newer
# than ggml_peer.c and libmplinear.a). Nothing is written outside $PEERS.
#
# Usage: sh bench/x86/ggml_setup.sh        (env: PEERS=/tmp/peers, MPL_BUILD=/work/main/build, JOBS=2)
# Then:  $PEERS/ggml_peer --help
set -eu

PEERS=${PEERS:-/tmp/peers}
MPL_BUILD=${MPL_BUILD:-/work/main/build}
JOBS=${JOBS:-2}
VER=0.3.36
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SRC=$PEERS/llama_cpp_python-$VER
LLAMA=$SRC/vendor/llama.cpp
BUILD=$PEERS/build-ggml

mkdir -p "$PEERS/dl"

# 1. download
TARBALL=$(ls "$PEERS"/dl/llama_cpp_python-$VER.tar.gz 2>/dev/null || true)
if [ -z "$TARBALL" ]; then
    echo "== downloading llama-cpp-python $VER (sdist) into $PEERS/dl"
    python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$VER" -d "$PEERS/dl"
    TARBALL=$(ls "$PEERS"/dl/llama_cpp_python-$VER.tar.gz)
else
    echo "== have $TARBALL"
fi

# 2. unpack
if [ ! -f "$LLAMA/ggml/include/ggml.h" ]; then
    echo "== unpacking into $PEERS"
    tar -xzf "$TARBALL" -C "$PEERS"
else
    echo "== have $LLAMA"
fi

# 3. ggml + ggml-cpu only
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    echo "== configuring ggml in $BUILD"
    cmake -S "$LLAMA" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
fi
echo "== building ggml, ggml-cpu (-j$JOBS; a no-op when up to date)"
cmake --build "$BUILD" --target ggml ggml-cpu -j"$JOBS"

GGML_LIBDIR=$(dirname "$(find "$BUILD" -name 'libggml.so' | head -n 1)")
[ -f "$GGML_LIBDIR/libggml.so" ] || { echo "ggml_setup.sh: no libggml.so under $BUILD" >&2; exit 1; }
GGML_LIBS=""
for l in ggml ggml-cpu ggml-base; do
    f=$(find "$BUILD" -name "lib$l.so" | head -n 1)
    [ -n "$f" ] || { echo "ggml_setup.sh: no lib$l.so under $BUILD" >&2; exit 1; }
    GGML_LIBS="$GGML_LIBS $f"
    GGML_RPATH="${GGML_RPATH:+$GGML_RPATH:}$(dirname "$f")"
done

# 4. the peer binary
MPL_LIB=$(find "$MPL_BUILD" -name libmplinear.a | head -n 1)
[ -n "$MPL_LIB" ] || { echo "ggml_setup.sh: no libmplinear.a under $MPL_BUILD (build mplinear first)" >&2; exit 1; }
# What the static library needs: the Libs.private line of the build's mplinear.pc when there is one,
# else the libraries the core needs plus json-c when the build has the model module.
PC=$(find "$MPL_BUILD" -maxdepth 2 -name mplinear.pc | head -n 1)
if [ -n "$PC" ] && grep -q '^Libs.private:' "$PC"; then
    MPL_DEPS=$(sed -n 's/^Libs.private:[[:space:]]*//p' "$PC")
else
    MPL_DEPS="-lm -ldl -lpthread"
    if grep -q 'json-c' "$MPL_BUILD/CMakeCache.txt" 2>/dev/null; then
        MPL_DEPS="$MPL_DEPS $(pkg-config --libs json-c)"
    fi
fi
OUT=$PEERS/ggml_peer
if [ ! -x "$OUT" ] || [ "$HERE/ggml_peer.c" -nt "$OUT" ] || [ "$MPL_LIB" -nt "$OUT" ] || [ "$0" -nt "$OUT" ]; then
    echo "== compiling $OUT"
    echo "   mplinear: $MPL_LIB $MPL_DEPS"
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -o "$OUT" "$HERE/ggml_peer.c" \
        -I"$ROOT/include" -I"$LLAMA/ggml/include" \
        "$MPL_LIB" $GGML_LIBS -Wl,-rpath,"$GGML_RPATH" $MPL_DEPS -lm -lpthread
else
    echo "== $OUT is up to date"
fi
echo "$OUT"
