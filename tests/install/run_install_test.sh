#!/bin/sh
# Installs lace from a build tree into a temporary prefix, then builds and
# runs a small mlx-c program against the installed files: with CMake's
# find_package(lace) (shared and static targets) and with pkg-config
# (shared, and static with --static).
# Usage: run_install_test.sh BUILD_DIR WORK_DIR CMAKE C_COMPILER
set -eu
build=$1 work=$2 cmake=$3 cc=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/mlx/c/mlx.h include/mlx/c/ops.h; do
  [ -f "$prefix/$f" ] || { echo "missing $prefix/$f"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name lace.pc | head -n 1)")/..
libdir=$(cd "$libdir" && pwd)
[ -f "$libdir/liblace.a" ] || { echo "missing liblace.a in $libdir"; exit 1; }
ls "$libdir"/liblace.so* >/dev/null

echo "== CMake find_package(lace)"
"$cmake" -S "$here/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
"$cmake" --build "$work/cmake" >>"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
"$work/cmake/consumer_shared"
"$work/cmake/consumer_static"

echo "== pkg-config lace"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs lace)
echo "pkg-config --cflags --libs lace: $flags"
# shellcheck disable=SC2086
"$cc" -std=c17 -Wall -Wextra -Werror "$here/consumer/consumer.c" -o "$work/pc_shared" $flags
LD_LIBRARY_PATH="$libdir" "$work/pc_shared"
# A static link: the archive and its private dependencies.
sflags=$(pkg-config --cflags --libs --static lace)
# shellcheck disable=SC2086
"$cc" -std=c17 -Wall -Wextra -Werror "$here/consumer/consumer.c" -o "$work/pc_static" \
  -Wl,-Bstatic -llace -Wl,-Bdynamic $sflags
"$work/pc_static"
echo "install test: ok"
