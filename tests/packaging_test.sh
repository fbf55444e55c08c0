#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ctest packaging.*: what a packager or an app developer without CMake does with vgpu.
#
#   packaging_test.sh pkgconfig CMAKE BUILD_DIR CXX
#     installs BUILD_DIR into a temporary prefix, then compiles and runs a tiny consumer with
#     nothing but `pkg-config --cflags --libs vgpu` (PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig),
#     and checks that it loads the installed libvgpu and prints the .pc file's version. A static
#     install (libvgpu.a, no libvgpu.so) is linked with `pkg-config --static`: its Libs.private.
#   packaging_test.sh consumer CMAKE BUILD_DIR SOURCE_DIR MAX_INTERNAL MAX_TOTAL
#     installs the shared BUILD_DIR into a temporary prefix, builds tests/packaging/consumer
#     with only find_package(vgpu) (nlohmann, CLI11 and xsimd hidden from find_package) and runs
#     it: a matmul on the CPU device, and a vgpu::Error from libvgpu caught by type. Then checks
#     the installed libvgpu.so's dynamic symbols (tools/symbol_report.sh): no nlohmann, TBB or
#     xsimd symbol, at most MAX_INTERNAL of vgpu's internal ones (detail, the layers' namespaces,
#     vgpu names no installed header declares) and at most MAX_TOTAL in all.
#   packaging_test.sh library_only CMAKE SOURCE_DIR WORK_DIR [CMAKE_ARGS...]
#     configures and builds a static libvgpu alone (-DBUILD_SHARED_LIBS=OFF
#     -DVGPU_BUILD_TOOLS=OFF -DVGPU_BUILD_TESTS=OFF -DVGPU_BUILD_BENCH=OFF) in WORK_DIR with
#     CLI11 and Catch2 hidden from find_package, which proves the library needs neither; then
#     installs it into WORK_DIR/prefix and builds and runs the same consumer against that static
#     package (its config must find every link dependency), and a pkg-config --static one (the
#     pkgconfig mode on WORK_DIR). WORK_DIR is kept between runs, so a rerun is incremental.
#   packaging_test.sh subproject CMAKE SOURCE_DIR WORK_DIR [CMAKE_ARGS...]
#     configures tests/packaging/parent, which takes vgpu in with FetchContent (pointed at
#     SOURCE_DIR: nothing downloaded), in WORK_DIR/parent and checks that vgpu left the parent
#     alone: no build type set, no BUILD_SHARED_LIBS or BUILD_TESTING in its cache (its own
#     library stays static), only the library configured (no tools, tests, benchmarks, Python
#     module or MPI layer), vgpu's outputs in vgpu's own binary folder, no vgpu install rules;
#     then builds and runs the parent's application and installs the parent (only its files).
#     Then that each of VGPU_BUILD_TOOLS, VGPU_WITH_PYTHON and VGPU_INSTALL switches its part on.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

# install_build CMAKE BUILD PREFIX: installs the build tree BUILD into PREFIX (its log beside
# PREFIX); on failure prints the log and exits 1.
install_build() {
  local cmake=$1 build=$2 prefix=$3
  if ! "$cmake" --install "$build" --prefix "$prefix" >"$prefix.install.log" 2>&1; then
    cat "$prefix.install.log"
    echo "FAIL: cmake --install $build failed. Fix: build every target first (cmake --build $build)."
    exit 1
  fi
}

# build_consumer CMAKE PREFIX WORK [CMAKE_ARGS...]: configures, builds and runs the consumer
# project against the vgpu installed in PREFIX, in WORK; fails if its link line names xsimd,
# nlohmann or CLI11 (none is a link dependency of vgpu).
build_consumer() {
  local cmake=$1 prefix=$2 work=$3
  shift 3
  rm -rf "$work"
  if ! "$cmake" --no-warn-unused-cli -S "$here/packaging/consumer" -B "$work" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
      -DCMAKE_DISABLE_FIND_PACKAGE_xsimd=ON "$@" >"$work.configure.log" 2>&1; then
    cat "$work.configure.log"
    echo "FAIL: find_package(vgpu) from $prefix failed. Fix: vgpuConfig.cmake must find_dependency() what libvgpu's link interface names."
    return 1
  fi
  if ! "$cmake" --build "$work" --verbose >"$work.build.log" 2>&1; then
    cat "$work.build.log"
    echo "FAIL: the consumer did not build against $prefix (see the link errors above)."
    return 1
  fi
  local link
  link=$(grep -E -- '-o [^ ]*vgpu-consumer( |$)' "$work.build.log" | tail -n 1)
  echo "consumer link: $link"
  if grep -qE -- '-lxsimd|nlohmann|CLI11' <<<"$link"; then
    echo "FAIL: the consumer's link line names xsimd, nlohmann or CLI11. Fix: keep them out of vgpu's link interface."
    return 1
  fi
  VGPU_CACHE_DISABLE=1 "$work/vgpu-consumer"
}

mode=$1
case "$mode" in
pkgconfig)
  cmake=$2 build=$3 cxx=$4
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  install_build "$cmake" "$build" "$tmp/prefix"
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
consumer)
  cmake=$2 build=$3 src=$4 max_internal=$5 max_total=$6
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  install_build "$cmake" "$build" "$tmp/prefix"
  lib=$(find "$tmp/prefix" -name 'libvgpu.so' | head -n 1)
  [[ -n "$lib" ]] || { echo "FAIL: no libvgpu.so under the prefix. Fix: this test needs a shared build (BUILD_SHARED_LIBS=ON)."; exit 1; }
  build_consumer "$cmake" "$tmp/prefix" "$tmp/consumer" -DCMAKE_CXX_COMPILER="${CXX:-c++}"
  loaded=$(ldd "$tmp/consumer/vgpu-consumer" | awk '/libvgpu/ {print $3}')
  [[ "$loaded" == "$tmp/prefix/"* ]] || { echo "FAIL: the consumer loads libvgpu from '$loaded', not the prefix"; exit 1; }
  report=$(bash "$src/tools/symbol_report.sh" "$lib")
  echo "$report"
  count() { awk -v k="$1" '$1 == k { print $2 }' <<<"$report"; }
  total=$(head -n 1 <<<"$report" | awk '{ print $2 }')
  internal=$(( $(count detail) + $(count backend) + $(count internal) + $(count anonymous) ))
  fail=0
  for kind in nlohmann tbb xsimd; do
    if (( $(count "$kind") != 0 )); then
      echo "FAIL: libvgpu.so exports $(count "$kind") $kind symbols (tools/symbol_report.sh --list $kind $lib). Fix: hidden visibility on every layer (vgpu_add_layer)."
      fail=1
    fi
  done
  if (( internal > max_internal )); then
    echo "FAIL: libvgpu.so exports $internal internal vgpu symbols, more than $max_internal (tools/symbol_report.sh --list detail|backend|internal $lib). Fix: VGPU_API only on the installed headers' declarations (docs/embedding.md)."
    fail=1
  fi
  # No test hooks ship (issue 30): no vgpu::testing symbol, no testing header installed; the
  # hold point's weak reference (vgpu_testing_calibration_hold, undefined) is all there is.
  hooks=$(nm -D --defined-only --demangle "$lib" | grep -E 'vgpu::testing|inject_loss|_testing' || true)
  if [[ -n "$hooks" ]]; then
    echo "FAIL: libvgpu.so defines test hooks: $hooks. Fix: test hooks live in tests/hooks (vgpu_testing), never in a layer."
    fail=1
  fi
  if find "$tmp/prefix" -name 'testing.hpp' | grep -q .; then
    echo "FAIL: the install has vgpu/testing.hpp. Fix: it belongs to tests/hooks, which is never installed."
    fail=1
  fi
  if (( total > max_total )); then
    echo "FAIL: libvgpu.so exports $total symbols, more than $max_total. Fix: VGPU_API only on the public API; if the API grew, raise the limit in tests/CMakeLists.txt (packaging.consumer_shared)."
    fail=1
  fi
  (( fail == 0 )) || exit 1
  echo "the shared install's consumer ran; libvgpu.so exports $total symbols, $internal of them internal"
  ;;
library_only)
  cmake=$2 src=$3 work=$4
  shift 4
  "$cmake" --fresh --no-warn-unused-cli -S "$src" -B "$work" -G Ninja "$@" -DBUILD_SHARED_LIBS=OFF -DVGPU_BUILD_TOOLS=OFF \
    -DVGPU_BUILD_TESTS=OFF -DVGPU_BUILD_BENCH=OFF -DVGPU_WITH_PYTHON=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON
  "$cmake" --build "$work" -j"${VGPU_JOBS:-2}" --target vgpu
  # The subdirectories the options leave out must not have been configured at all.
  for dir in tools tests bench; do
    if [[ -e "$work/$dir" ]]; then
      echo "FAIL: the library-only build configured $dir/ ($work/$dir exists)"; exit 1
    fi
  done
  echo "libvgpu built alone, without CLI11 or Catch2"
  # The static package: installed, then linked by a consumer with only find_package(vgpu).
  rm -rf "$work/prefix"
  install_build "$cmake" "$work" "$work/prefix"
  [[ -n "$(find "$work/prefix" -name libvgpu.a)" ]] || { echo "FAIL: the static install has no libvgpu.a"; exit 1; }
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$work/CMakeCache.txt")
  build_consumer "$cmake" "$work/prefix" "$work/consumer" -DCMAKE_CXX_COMPILER="$compiler"
  exe=$work/consumer/vgpu-consumer
  if ldd "$exe" | grep -q libvgpu; then
    echo "FAIL: the static consumer loads a shared libvgpu: $(ldd "$exe" | grep libvgpu)"; exit 1
  fi
  # Linked means no undefined symbol was left; what remains undefined is imported from shared
  # system libraries (libtbb, libxxhash, libstdc++, libc), all of which must be found, and is
  # never one of vgpu's own.
  undefined=$(nm -u --demangle "$exe" | grep -E 'vgpu::' || true)
  [[ -z "$undefined" ]] || { echo "FAIL: the static consumer leaves vgpu symbols undefined:"; echo "$undefined"; exit 1; }
  if ldd "$exe" | grep -q 'not found'; then
    echo "FAIL: the static consumer needs a library the loader cannot find:"; ldd "$exe" | grep 'not found'; exit 1
  fi
  echo "the static install's consumer linked with only find_package(vgpu) and ran"
  # And the same static install through pkg-config --static (its Libs.private).
  bash "$0" pkgconfig "$cmake" "$work" "$compiler"
  ;;
subproject)
  cmake=$2 src=$3 work=$4
  shift 4
  parent=$work/parent
  build=$parent/build
  rm -rf "$parent"
  mkdir -p "$parent"
  # expect FACT VALUE: parent-facts.txt's line FACT=VALUE, else a failure saying what leaked.
  expect() {
    local got
    got=$(sed -n "s/^$1=//p" "$build/parent-facts.txt")
    if [[ "$got" != "$2" ]]; then
      echo "FAIL: after FetchContent_MakeAvailable(vgpu) the parent's $1 is '$got', expected '$2'"; exit 1
    fi
  }
  "$cmake" --no-warn-unused-cli -S "$here/packaging/parent" -B "$build" -G Ninja -DFETCHCONTENT_SOURCE_DIR_VGPU="$src" \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON "$@" >"$parent/configure.log" 2>&1 ||
    { cat "$parent/configure.log"; echo "FAIL: the parent project did not configure with vgpu as a subproject"; exit 1; }
  expect parent_lib_type STATIC_LIBRARY
  expect build_type ""
  expect cache_BUILD_SHARED_LIBS "<not in the cache>"
  expect cache_BUILD_TESTING "<not in the cache>"
  expect cache_VGPU_BUILD_TOOLS OFF
  expect cache_VGPU_INSTALL OFF
  expect targets vgpu
  expect vgpu_output_dir "$build/_deps/vgpu-build/lib|$build/_deps/vgpu-build/lib"
  expect parent_runtime_output_dir ""
  for dir in tools tests bench python mpi; do
    if [[ -e "$build/_deps/vgpu-build/$dir" ]]; then
      echo "FAIL: vgpu as a subproject configured its $dir/ ($build/_deps/vgpu-build/$dir exists)"; exit 1
    fi
  done
  echo "the parent's settings are its own; vgpu configured its library alone"
  "$cmake" --build "$build" -j"${VGPU_JOBS:-2}" >"$parent/build.log" 2>&1 ||
    { tail -n 40 "$parent/build.log"; echo "FAIL: the parent project did not build"; exit 1; }
  "$build/parent_app" || { echo "FAIL: the parent's application failed"; exit 1; }
  if [[ -e "$build/lib" || -e "$build/bin" ]]; then
    echo "FAIL: vgpu put outputs in the parent's binary folder: $(ls -d "$build/lib" "$build/bin" 2>/dev/null)"; exit 1
  fi
  [[ -n "$(find "$build/_deps/vgpu-build/lib" -maxdepth 1 -name 'libvgpu.*')" ]] ||
    { echo "FAIL: no libvgpu in vgpu's own binary folder $build/_deps/vgpu-build/lib"; exit 1; }
  "$cmake" --install "$build" --prefix "$parent/prefix" >"$parent/install.log" 2>&1 ||
    { cat "$parent/install.log"; echo "FAIL: the parent project did not install"; exit 1; }
  installed=$(cd "$parent/prefix" && find . -type f | sort)
  if grep -q vgpu <<<"$installed"; then
    echo "FAIL: installing the parent installed vgpu's files (VGPU_INSTALL is off by default inside another project):"
    grep vgpu <<<"$installed"; exit 1
  fi
  echo "the parent built, ran and installed only its own files: $(tr '\n' ' ' <<<"$installed")"
  # Each part can be switched on: configure again with the switches, nothing built.
  "$cmake" --no-warn-unused-cli -S "$here/packaging/parent" -B "$build" -DVGPU_BUILD_TOOLS=ON -DVGPU_INSTALL=ON \
    -DVGPU_WITH_PYTHON=AUTO >"$parent/configure-on.log" 2>&1 ||
    { cat "$parent/configure-on.log"; echo "FAIL: the parent did not configure with vgpu's tools, Python module and install rules on"; exit 1; }
  expect cache_VGPU_BUILD_TOOLS ON
  expect cache_VGPU_INSTALL ON
  got=$(sed -n 's/^targets=//p' "$build/parent-facts.txt")
  for want in vgpu-probe vgpu_python; do
    [[ ";$got;" == *";$want;"* ]] || { echo "FAIL: with its switch on, vgpu as a subproject has no $want target (targets: $got)"; exit 1; }
  done
  grep -q 'vgpu/vgpuTargets.cmake\|cmake/vgpu' "$build/_deps/vgpu-build/cmake_install.cmake" ||
    { echo "FAIL: VGPU_INSTALL=ON added no install rules for vgpu's CMake package"; exit 1; }
  echo "VGPU_BUILD_TOOLS, VGPU_WITH_PYTHON and VGPU_INSTALL each switch their part on"
  ;;
*)
  echo "usage: packaging_test.sh pkgconfig|consumer|library_only|subproject ... (got '$mode'). Fix: see the comment at its top."
  exit 2
  ;;
esac
