#!/usr/bin/env bash
# tools/dev.sh — one entry point for developers and CI: install dependencies (Debian/Ubuntu),
# configure, build, then run, test or benchmark. Works from any directory.
#
#   tools/dev.sh build          install missing packages, configure and build
#   tools/dev.sh run            ... then run build/bin/vgpu-probe and build/bin/vgpu-demo
#   tools/dev.sh test [ARGS]    ... then ctest (extra ARGS go to ctest, e.g. -R cache)
#   tools/dev.sh bench          ... then every build/bin/vgpu-bench-*
#
# Environment: VGPU_JOBS (build parallelism, default 2).
set -euo pipefail

# Every Debian package the build, the tests and the tools need; one list, kept here.
PACKAGES=(
  g++ cmake ninja-build pkg-config python3-glad
  libegl1 libegl-mesa0 libgl1-mesa-dri libvulkan-dev mesa-vulkan-drivers
  glslc glslang-tools libshaderc-dev spirv-tools spirv-headers
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

# Configures (cmake re-runs are cheap and pick up CMakeLists changes) and builds.
build() {
  say "configuring ${BUILD_DIR}/"
  cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
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
    test) ;;
    -h | --help | help) usage ;;
    *) say "unknown command '$cmd'" >&2; usage ;;
  esac

  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  trap finish EXIT
  # A signal must reach finish() as a failure, not as the last command's status.
  trap 'exit 130' INT
  trap 'exit 143' TERM
  install_deps
  build
  case "$cmd" in
    build) ;;
    run) run_tools ;;
    test) run_tests "$@" ;;
    bench) run_benches ;;
  esac
}

main "$@"
