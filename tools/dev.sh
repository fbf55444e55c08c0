#!/usr/bin/env bash
# tools/dev.sh — one entry point for developers and CI: install dependencies (Debian/Ubuntu),
# configure, build, then run, test or benchmark. Works from any directory.
#
#   tools/dev.sh build          install missing packages, configure and build
#   tools/dev.sh run            ... then run build/bin/vgpu-probe and build/bin/vgpu-demo
#   tools/dev.sh test [ARGS]    ... then ctest (extra ARGS go to ctest, e.g. -R cache)
#   tools/dev.sh bench          ... then every build/bin/vgpu-bench-*
#   tools/dev.sh sanitize [ARGS] configure and build build-sanitize/ with ASan+UBSan
#                               (VGPU_SANITIZE=address,undefined), then ctest there
#
# Environment: VGPU_JOBS (build parallelism, default 2).
set -euo pipefail

# Every Debian package the build, the tests and the tools need; one list, kept here.
PACKAGES=(
  g++ cmake ninja-build pkg-config python3-glad
  libegl1 libegl-mesa0 libgl1-mesa-dri libvulkan-dev mesa-vulkan-drivers
  glslc glslang-tools libshaderc-dev
  libtbb-dev libxsimd-dev catch2 libxxhash-dev nlohmann-json3-dev libcli11-dev
  libopenblas-dev vulkan-tools mesa-utils
)

BUILD_DIR=build
START_NS=$(date +%s%N)
TEMP_DIRS=()

# Prints one progress line.
say() { printf 'dev.sh: %s\n' "$*"; }

# Prints usage on stderr and exits 2.
usage() {
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# On exit: removes temp dirs and prints the total time with the outcome.
finish() {
  local rc=$?
  if ((${#TEMP_DIRS[@]})); then rm -rf "${TEMP_DIRS[@]}"; fi
  local ms=$((($(date +%s%N) - START_NS) / 1000000))
  local total
  total=$(printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)))
  if ((rc == 0)); then say "done in ${total}"; else say "failed (exit ${rc}) after ${total}"; fi
}

# Installs the packages of PACKAGES that dpkg does not report as installed.
install_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "dpkg-query not found: not a Debian/Ubuntu system, skipping dependency install"
    return
  fi
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    say "all ${#PACKAGES[@]} packages present"
    return
  fi
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      say "missing packages: ${missing[*]}; not root and no sudo: install them, then re-run" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  say "installing ${#missing[@]} missing packages: ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# Configures (cmake re-runs are cheap and pick up CMakeLists changes) and builds; extra
# arguments go to cmake's configure step.
build() {
  say "configuring ${BUILD_DIR}/"
  cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  say "building with ${VGPU_JOBS:-2} jobs"
  cmake --build "${BUILD_DIR}" -j"${VGPU_JOBS:-2}"
}

# Runs the probe and the demo.
run_tools() {
  say "running vgpu-probe"
  "${BUILD_DIR}/bin/vgpu-probe"
  say "running vgpu-demo"
  "${BUILD_DIR}/bin/vgpu-demo"
}

# Runs ctest with throwaway shader and kernel caches, so tests never touch ~/.cache.
run_tests() {
  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-test.XXXXXX")
  TEMP_DIRS+=("$tmp")
  mkdir -p "$tmp/mesa" "$tmp/vgpu"
  export MESA_SHADER_CACHE_DIR="$tmp/mesa" VGPU_CACHE_DIR="$tmp/vgpu"
  say "testing (caches in $tmp)"
  ctest --test-dir "${BUILD_DIR}" --output-on-failure --no-tests=error -j2 "$@"
}

# Runs ctest in the sanitizer build. Leaks are reported except inside the Mesa drivers and
# their LLVM JIT (tests/sanitizer/lsan.supp says which and why); any report fails the test.
run_sanitized_tests() {
  # The Vulkan loader dlcloses lavapipe after each instance, which makes a global allocation of
  # lavapipe's unreachable (a "leak" in a module LSan can no longer name); preloading the ICD
  # keeps it mapped, so LSan sees it reachable and names the module of any real report.
  local lvp_json=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json lvp_lib
  lvp_lib=$(ldconfig -p | awk '/libvulkan_lvp.so/ {print $NF; exit}')
  if [[ -f $lvp_json && -n $lvp_lib ]]; then
    export VK_DRIVER_FILES=$lvp_json LD_PRELOAD="$lvp_lib${LD_PRELOAD:+ $LD_PRELOAD}"
  fi
  export ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0:detect_stack_use_after_return=0:strict_string_checks=1"
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$PWD/tests/sanitizer/ubsan.supp"
  # Selection tests that assert which of several devices measured fastest (injected latencies
  # of 1-3 ms against instrumented code) are left to the plain build.
  run_tests -E 'selection\.(the fastest device is chosen|devices within 30%|a big problem is probed|a device that fails at dispatch|on this machine)' "$@"
}

# Runs every benchmark executable build/bin/vgpu-bench-*.
run_benches() {
  local found=0 b
  shopt -s nullglob
  for b in "${BUILD_DIR}"/bin/vgpu-bench-*; do
    [[ -f $b && -x $b ]] || continue
    found=1
    say "running ${b}"
    "$b"
  done
  shopt -u nullglob
  if ((found == 0)); then say "no benchmarks found (${BUILD_DIR}/bin/vgpu-bench-*)"; fi
}

main() {
  (($# >= 1)) || usage
  local cmd=$1
  shift
  case "$cmd" in
    build | run | bench) (($# == 0)) || usage ;;
    test | sanitize) ;;
    -h | --help | help) usage ;;
    *) say "unknown command '$cmd'" >&2; usage ;;
  esac

  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  trap finish EXIT
  # A signal must reach finish() as a failure, not as the last command's status.
  trap 'exit 130' INT
  trap 'exit 143' TERM
  install_deps
  if [[ $cmd == sanitize ]]; then
    BUILD_DIR=build-sanitize
    build -DVGPU_SANITIZE=address,undefined -DVGPU_BUILD_BENCH=OFF
    run_sanitized_tests "$@"
    return
  fi
  build
  case "$cmd" in
    build) ;;
    run) run_tools ;;
    test) run_tests "$@" ;;
    bench) run_benches ;;
  esac
}

main "$@"
