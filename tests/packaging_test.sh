#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ctest packaging.*: what a packager or an app developer without CMake does with vgpu.
#
#   packaging_test.sh pkgconfig CMAKE BUILD_DIR CXX
#     installs BUILD_DIR into a temporary prefix, then compiles and runs a tiny consumer with
#     nothing but `pkg-config --cflags --libs vgpu` (PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig),
#     and checks that it loads the installed libvgpu and prints the .pc file's version. A static
#     install (libvgpu.a, no libvgpu.so) is linked with `pkg-config --static`: its Libs.private.
#   packaging_test.sh library_only CMAKE SOURCE_DIR WORK_DIR [CMAKE_ARGS...]
#     configures and builds libvgpu alone (-DVGPU_BUILD_TOOLS=OFF -DVGPU_BUILD_TESTS=OFF
#     -DVGPU_BUILD_BENCH=OFF) in WORK_DIR with CLI11 and Catch2 hidden from find_package, which
#     proves the library needs neither. WORK_DIR is kept between runs, so a rerun is incremental.
set -euo pipefail

mode=$1
case "$mode" in
pkgconfig)
  cmake=$2 build=$3 cxx=$4
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! "$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: cmake --install $build failed. Fix: build every target first (cmake --build $build)."
    exit 1
  fi
  pc=$(find "$tmp/prefix" -name vgpu.pc -path '*/pkgconfig/*' | head -n 1)
  [[ -n "$pc" ]] || { echo "FAIL: no pkgconfig/vgpu.pc installed under the prefix"; exit 1; }
  [[ -f "$tmp/prefix/share/doc/vgpu/LICENSE" ]] || { echo "FAIL: LICENSE is not installed in share/doc/vgpu"; exit 1; }
  # Moved after installing: the .pc file must find its prefix from where it lies (${pcfiledir}).
  mv "$tmp/prefix" "$tmp/moved"
  pc_dir=$(dirname "${pc#"$tmp/prefix/"}")
  # PKG_CONFIG_LIBDIR empty: no system directory is searched, only the moved prefix.
  export PKG_CONFIG_PATH="$tmp/moved/$pc_dir" PKG_CONFIG_LIBDIR=
  libdir=$(pkg-config --variable=libdir vgpu)
  static=
  [[ -e "$libdir/libvgpu.a" && ! -e "$libdir/libvgpu.so" ]] && static=--static
  flags=$(pkg-config $static --cflags --libs vgpu)
  version=$(pkg-config --modversion vgpu)
  echo "pkg-config $static --cflags --libs vgpu: $flags (libdir $libdir, version $version)"
  [[ "$(realpath "$libdir")" == "$tmp/moved/"* ]] || { echo "FAIL: libdir $libdir is not inside the moved prefix"; exit 1; }
  cat >"$tmp/consumer.cpp" <<'CPP'
#include <cstdio>
#include <string>
#include <vgpu/inventory.hpp>  // version_string
#include <vgpu/vgpu.hpp>
// Prints the library's version, then multiplies on the CPU device and checks the result.
int main(int argc, char** argv) {
  if (argc < 2 || vgpu::version_string().find(argv[1]) == std::string::npos) {
    std::printf("version %s does not contain %s\n", vgpu::version_string().c_str(), argc < 2 ? "?" : argv[1]);
    return 1;
  }
  vgpu::Cache cache(vgpu::Runtime::global().open("cpu:0"));
  vgpu::Matrix a(4, 4, 1.0f), b(4, 4, 2.0f);
  vgpu::Matrix c = cache.matmul(a, b);
  std::printf("consumer: vgpu %s, c(0,0) = %g\n", vgpu::version_string().c_str(), c(0, 0));
  return c(0, 0) == 8.0f ? 0 : 1;
}
CPP
  # shellcheck disable=SC2086 # the flags are words
  "$cxx" -std=c++20 "$tmp/consumer.cpp" -o "$tmp/consumer" $flags -Wl,-rpath,"$libdir"
  if [[ -z "$static" ]]; then
    loaded=$(ldd "$tmp/consumer" | awk '/libvgpu/ {print $3}')
    [[ "$loaded" == "$tmp/moved/"* ]] || { echo "FAIL: the consumer loads libvgpu from '$loaded', not the prefix"; exit 1; }
  fi
  VGPU_CACHE_DISABLE=1 "$tmp/consumer" "$version"
  ;;
library_only)
  cmake=$2 src=$3 work=$4
  shift 4
  "$cmake" --fresh --no-warn-unused-cli -S "$src" -B "$work" -G Ninja "$@" -DVGPU_BUILD_TOOLS=OFF -DVGPU_BUILD_TESTS=OFF \
    -DVGPU_BUILD_BENCH=OFF -DVGPU_WITH_PYTHON=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON
  "$cmake" --build "$work" -j"${VGPU_JOBS:-2}" --target vgpu
  # The subdirectories the options leave out must not have been configured at all.
  for dir in tools tests bench; do
    if [[ -e "$work/$dir" ]]; then
      echo "FAIL: the library-only build configured $dir/ ($work/$dir exists)"; exit 1
    fi
  done
  echo "libvgpu built alone, without CLI11 or Catch2"
  ;;
*)
  echo "usage: packaging_test.sh pkgconfig|library_only ... (got '$mode'). Fix: see the comment at its top."
  exit 2
  ;;
esac
