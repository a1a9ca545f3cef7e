#!/usr/bin/env bash
# tests/install/run.sh BUILD_DIR -- the install test (ctest -L install): installs the build into a
# temporary prefix, then builds tests/install/consumer.c outside the tree against it four ways and
# runs each:
#   1. cc $(pkg-config --cflags --libs mplinear)            the shared library
#   2. cc $(pkg-config --cflags --static --libs mplinear)   the static library (-lmplinear taken from
#                                                           libmplinear.a: the linker would pick the .so)
#   3. find_package(mplinear) -> mplinear::mplinear         (tests/install/CMakeLists.txt)
#   4. find_package(mplinear) -> mplinear::mplinear_static
# and checks that the installed libmplinear.so has SONAME libmplinear.so.0.1 and exports exactly the
# functions include/mplinear.h marks MPL_API (nm -D --defined-only), nothing else.
# Environment: CC (default cc), CMAKE_COMMAND (default cmake), MPL_INSTALL_CFLAGS (extra compile and
# link flags, e.g. the sanitizers the build used). Exits non-zero on the first failure.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: $0 BUILD_DIR (a configured and built mplinear build)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
cmake_cmd=${CMAKE_COMMAND:-cmake}
extra=${MPL_INSTALL_CFLAGS:-}
# shellcheck disable=SC2206 # extra is a list of flags
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic $extra)

work=$(mktemp -d "${TMPDIR:-/tmp}/mplinear-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { printf '== %s\n' "$*"; }
die() {
  printf 'install test: FAIL: %s\n' "$*" >&2
  exit 1
}

step "cmake --install $build --prefix $prefix"
"$cmake_cmd" --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"
  die "cmake --install failed"
}
pc=$(find "$prefix" -name mplinear.pc -print -quit)
[ -n "$pc" ] || die "no mplinear.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir mplinear)
so=$libdir/libmplinear.so
for f in "$prefix/include/mplinear.h" "$so" "$libdir/libmplinear.a" \
  "$libdir/cmake/mplinear/mplinearConfig.cmake" "$libdir/cmake/mplinear/mplinearConfigVersion.cmake"; do
  [ -e "$f" ] || die "not installed: ${f#"$prefix"/}"
done

step "libmplinear.so: SONAME and exported symbols"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libmplinear.so.0.1 ] || die "SONAME is '$soname', expected libmplinear.so.0.1"
nm -D --defined-only "$so" | awk '{print $NF}' | sort >"$work/exported"
grep -E '^MPL_API ' "$prefix/include/mplinear.h" | sed -E 's/^MPL_API [^(]*[ *](mpl_[a-z0-9_]+)\(.*/\1/' |
  sort >"$work/declared"
if grep -v '^mpl_' "$work/exported" >"$work/foreign"; then
  head -20 "$work/foreign" >&2
  die "libmplinear.so exports $(wc -l <"$work/foreign") symbols outside mpl_ (above: the first 20)"
fi
if ! diff -u "$work/declared" "$work/exported" >"$work/symdiff"; then
  cat "$work/symdiff" >&2
  die "exported symbols differ from the MPL_API functions of mplinear.h (- declared only, + exported only)"
fi
echo "   $(wc -l <"$work/exported") symbols, all MPL_API functions of mplinear.h"

# needs BINARY yes|no: whether BINARY must load libmplinear.so.0.1.
needs() {
  if readelf -d "$1" | grep -q 'NEEDED.*\[libmplinear\.so'; then
    [ "$2" = yes ] || die "$(basename "$1") is linked to libmplinear.so, expected the static library"
  else
    [ "$2" = no ] || die "$(basename "$1") is not linked to libmplinear.so"
  fi
}
run() {
  local out
  out=$("$@") || die "$(basename "$1") failed"
  echo "   $out"
}

step "pkg-config, shared: $cc \$(pkg-config --cflags --libs mplinear)"
# shellcheck disable=SC2046 # pkg-config prints a list of flags
"$cc" "${cflags[@]}" "$here/consumer.c" -o "$work/pc_shared" $(pkg-config --cflags --libs mplinear) \
  -Wl,-rpath,"$libdir"
needs "$work/pc_shared" yes
run "$work/pc_shared"

step "pkg-config, static: $cc \$(pkg-config --cflags --static --libs mplinear)"
static_libs=$(pkg-config --static --libs mplinear)
static_libs=${static_libs/-lmplinear/-Wl,-Bstatic -lmplinear -Wl,-Bdynamic}
# shellcheck disable=SC2046,SC2086
"$cc" "${cflags[@]}" "$here/consumer.c" -o "$work/pc_static" $(pkg-config --cflags mplinear) $static_libs
needs "$work/pc_static" no
run "$work/pc_static"

step "find_package(mplinear): mplinear::mplinear and mplinear::mplinear_static"
"$cmake_cmd" -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$work/cmake.log" 2>&1 || {
  cat "$work/cmake.log"
  die "configuring tests/install against the installed package failed"
}
"$cmake_cmd" --build "$work/cmake" >>"$work/cmake.log" 2>&1 || {
  tail -n 40 "$work/cmake.log"
  die "building tests/install against the installed package failed"
}
needs "$work/cmake/consumer_shared" yes
run "$work/cmake/consumer_shared"
needs "$work/cmake/consumer_static" no
run "$work/cmake/consumer_static"

echo "install test: 4 programs built and run against $(basename "$so") $(pkg-config --modversion mplinear)"
