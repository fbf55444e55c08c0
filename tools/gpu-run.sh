#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/gpu-run.sh — run vgpu's tests and benchmarks on the GPU machine (see shared/gpu/README.md).
#
#   tools/gpu-run.sh stage    (here) build, then copy stripped binaries, libvgpu and the run-time
#                             libraries the GPU machine lacks into .gpu/ (git-ignored, < 64 MiB)
#   tools/gpu-run.sh remote [all|tests|python|ncu|first|multi|dtypes|observe]
#                             (there, from the repo root, with $OUT set) run the probe, every
#                             test program per backend, then (all, the default) the GPU, dispatch,
#                             queue, recovery, round-trip and selection benchmarks and the probe's bench/select,
#                             or (tests) only the queue, recovery, round-trip and arrays benchmarks; logs go to $OUT,
#                             the benches' JSON (round trip and arrays; all: GPU and selection too) into one
#                             archive, $OUT/results-json.tar.gz.
#                             python: build the Python module there (its python3 + pybind11, against
#                             the vgpu staged in .gpu/ as an install prefix), then run
#                             bench/python_overhead.py, the pytest suite and bench/cpu_reference.py
#                             (vgpu's CPU matmul beside numpy and torch); python.txt, summary.txt and the
#                             three JSON files in one archive, $OUT/results-json-python.tar.gz
#                             ncu: Nsight Compute (ncu --clock-control none) on cuBLAS's SGEMM and
#                             vgpu's CUDA matmul at N=4096, or each of NCU_SIZES (the rule's
#                             pick, then each tiling of NCU_TILINGS; "" for none), one product
#                             per process (vgpu-bench-gpu --profile);
#                             $OUT/ncu.txt (the reports, a summary table last) and $OUT/summary.txt
#                             dtypes (issue 32): the tensor-core and TF32 conformance cases on CUDA
#                             (every mma/TF32 tiling, 16-bit and TF32 ops and stacks, against fp64),
#                             then vgpu-bench-dtypes (f32/f16/bf16/TF32 per device at 1024-8192 on
#                             CUDA, beside cuBLAS's SGEMM, GemmEx and TF32 SGEMM); $OUT/dtypes.txt,
#                             $OUT/summary.txt and $OUT/results-json-dtypes.tar.gz (bench-dtypes.json)
#                             observe (issue 34): vgpu-probe list, the device-timing contract case per
#                             backend, vgpu-bench-roundtrip (its device-time table), a select with
#                             VGPU_DEVICE_TIMING=1, then vgpu-bench-select --json (the choice per op x size
#                             that tools/plot_benchmarks.py draws as selection.png);
#                             $OUT/observe.txt and $OUT/results-json-observe.tar.gz
#                             multi (issue 18, a host of several GPUs: nvidia-h200-x2 or more):
#                             vgpu-bench-multi over the CUDA devices (64 x 2048^3 batched, 8192^3
#                             split; 1, 2, ... devices in one run; a 262144 x 1 KiB queue over the set vs one device), then over the Vulkan devices,
#                             and the multi_device tests; $OUT/multi.txt
#                             (MULTI_BATCH, MULTI_SIZE, MULTI_SPLIT change the sizes: not VGPU_*,
#                             which vgpu itself reads and warns about when it does not know one)
#
# The device tool carries .gpu/ with the run: carry [".gpu"], command "bash tools/gpu-run.sh remote"
# (or "bash tools/gpu-run.sh remote python": a separate command, as $OUT holds at most 8 files).
# CI never calls this script. The JSON archives are what tools/plot_benchmarks.py draws docs/img/ from
# (docs/benchmarks.md, "Plots"): tar -xzf results-json.tar.gz -C DIR, then plot DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
stage_dir=.gpu

# pack_json DIR ARCHIVE: every *.json in DIR into one .tar.gz (the device tool returns at most 8
# files, so the benches' JSON travel as one); says what it packed, never fails the run.
pack_json() {
  local dir=$1 archive=$2 names=()
  local f
  for f in "$dir"/*.json; do [ -f "$f" ] && names+=("$(basename "$f")"); done
  if ((${#names[@]} == 0)); then
    echo "json: none written, no $(basename "$archive")"
    return 0
  fi
  if tar -czf "$archive" -C "$dir" "${names[@]}"; then
    echo "json: ${names[*]} -> $(basename "$archive")"
  else
    echo "json: packing ${names[*]} into $(basename "$archive") FAILED"
  fi
}

stage() {
  tools/dev.sh build
  rm -rf "$stage_dir"
  mkdir -p "$stage_dir/bin" "$stage_dir/lib"
  # git-path: .git is a file in a worktree; info/exclude is shared by the repository's worktrees.
  local exclude
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$stage_dir/" "$exclude" 2>/dev/null || echo "/$stage_dir/" >> "$exclude"
  # .gpu/ is also an install prefix of vgpu (libvgpu, headers, lib/cmake/vgpu), so the Python
  # module can be built there against it (remote python); the Python package itself is left out
  # (component python): it is built there for that machine's interpreter.
  cmake --install build --prefix "$stage_dir" --component Unspecified >/dev/null
  # DLPack's header (Debian's libdlpack-dev), which the Python module builds against there.
  mkdir -p "$stage_dir/include/dlpack" && cp /usr/include/dlpack/dlpack.h "$stage_dir/include/dlpack/"
  # The MPI layer is not used there, and without it .gpu/ stays under the 64 MiB the device tool
  # carries; its CMake export goes with it, so find_package(vgpu) (remote python) still works.
  rm -f "$stage_dir"/lib/libvgpu_mpi* "$stage_dir"/lib/cmake/vgpu/vgpuMpiTargets*.cmake
  for b in build/bin/vgpu-probe build/bin/vgpu-demo build/bin/vgpu-conformance build/bin/vgpu-test-* \
           build/bin/vgpu-l2-writer build/bin/vgpu-bench-gpu build/bin/vgpu-bench-dispatch build/bin/vgpu-bench-select build/bin/vgpu-bench-predict \
           build/bin/vgpu-bench-queue build/bin/vgpu-bench-recovery build/bin/vgpu-bench-python-ref \
           build/bin/vgpu-bench-roundtrip build/bin/vgpu-bench-cpu-kernels build/bin/vgpu-bench-first-call \
           build/bin/vgpu-bench-predict build/bin/vgpu-bench-multi build/bin/vgpu-bench-arrays \
           build/bin/vgpu-bench-dtypes; do
    [ -x "$b" ] && strip -o "$stage_dir/bin/$(basename "$b")" "$b"
  done
  for l in build/lib/libvgpu.so*; do
    if [ -L "$l" ]; then cp -P "$l" "$stage_dir/lib/"; else strip -o "$stage_dir/lib/$(basename "$l")" "$l"; fi
  done
  # The test hooks the exit child links (never part of libvgpu: tests/hooks).
  strip -o "$stage_dir/lib/libvgpu_testing_hooks.so" build/lib/testing/libvgpu_testing_hooks.so
  # libvgpu links SPIRV-Cross (reflection, GL cross-compiles) and cpuinfo (the platform layer),
  # which the GPU machine lacks.
  # glslc (and its libshaderc) too: the Python tests make SPIR-V with it at run time, and the
  # GPU machine has no GLSL compiler of its own.
  strip -o "$stage_dir/bin/glslc" "$(command -v glslc)"
  bash ../shared/gpu/bundle-libs.sh "$stage_dir/lib" libspirv-cross-c-shared.so.0 libshaderc.so.1 libcpuinfo.so.0 >/dev/null
  # The Khronos validation layer, so the Vulkan corpus runs under it there as in CI.
  local layer=/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so
  local manifest=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
  if [ -f "$layer" ] && [ -f "$manifest" ]; then
    mkdir -p "$stage_dir/layers"
    cp "$layer" "$manifest" "$stage_dir/layers/"
    sed -i 's|"library_path": *"[^"]*"|"library_path": "./libVkLayer_khronos_validation.so"|' \
      "$stage_dir/layers/$(basename "$manifest")"
    # Compressed to stay under the 64 MiB the device tool carries; remote() unpacks it.
    gzip -9 "$stage_dir/layers/$(basename "$layer")"
  fi
  # The test programs link vgpu_internal (each carries ~10 MB of the same vgpu code), so bin/
  # and lib/ (libvgpu is that code once more) travel as one xz stream whose 64 MiB window shares
  # it between them (~330 MB -> ~32 MB in ~30 s); remote() unpacks it.
  tar -cf - -C "$stage_dir" bin lib | xz -T1 --lzma2=preset=1,dict=64MiB > "$stage_dir/bin.tar.xz"
  rm -rf "$stage_dir/bin" "$stage_dir/lib"
  du -sh "$stage_dir"
}

remote() {
  : "${OUT:?remote mode needs OUT (the device tool sets it)}"
  local what=${1:-all}
  case $what in all|tests|python|ncu|first|multi|dtypes|observe) ;; *) echo "usage: tools/gpu-run.sh remote [all|tests|python|ncu|first|multi|dtypes|observe]" >&2; exit 2 ;; esac
  local bin=$PWD/$stage_dir/bin
  if [ -f "$stage_dir/bin.tar.xz" ]; then xz -dc "$stage_dir/bin.tar.xz" | tar -xf - -C "$stage_dir"; fi
  # The validation layer travels compressed: unpack it beside its manifest.
  local gz=$PWD/$stage_dir/layers/libVkLayer_khronos_validation.so.gz
  if [ -f "$gz" ]; then gunzip -c "$gz" > "${gz%.gz}"; fi
  export LD_LIBRARY_PATH=$PWD/$stage_dir/lib:${LD_LIBRARY_PATH:-}
  export VGPU_CACHE_DIR=/tmp/vgpu-cache MESA_SHADER_CACHE_DIR=/tmp/mesa-cache
  # Where glvnd's vendor files are not where the loaders look, name the NVIDIA ones.
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$f" ] && { export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$f}; break; }
  done
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    [ -f "$f" ] && { export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-$f}; break; }
  done
  if [ "$what" = python ]; then
    remote_python
    return
  fi
  if [ "$what" = ncu ]; then
    remote_ncu "$bin"
    return
  fi
  if [ "$what" = first ]; then
    remote_first "$bin"
    return
  fi
  if [ "$what" = multi ]; then
    remote_multi "$bin"
    return
  fi
  if [ "$what" = dtypes ]; then
    remote_dtypes "$bin"
    return
  fi
  if [ "$what" = observe ]; then
    remote_observe "$bin"
    return
  fi
  # At most 8 files come back from the device tool: keep the outputs to these (7: probe, tests,
  # bench-calls, bench-gpu, bench-select, summary, results-json.tar.gz). The benches' JSON go to
  # $json and travel packed into one archive.
  local json=/tmp/vgpu-json-$what
  rm -rf "$json" && mkdir -p "$json"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/probe.txt" 2>&1 || true
  "$bin/vgpu-probe" >> "$OUT/probe.txt" 2>&1 || true
  "$bin/vgpu-probe" --json >> "$OUT/probe.txt" 2>&1 || true
  local summary=() status
  {
    for backend in cpu vulkan opengl cuda; do
      echo "=== conformance.$backend"
      set +e; VGPU_TEST_BACKENDS=$backend "$bin/vgpu-conformance"; status=$?; set -e
      summary+=("conformance.$backend: $([ $status = 0 ] && echo passed || { [ $status = 77 ] && echo skipped || echo "FAILED ($status)"; })")
    done
    # The user-shader corpus as ctest runs it: Vulkan under the validation layer (any message
    # fails), OpenGL by GL_ARB_gl_spirv and again through SPIRV-Cross.
    for run in vulkan opengl opengl.spirv_cross; do
      echo "=== user_shaders.$run"
      set +e
      case $run in
        vulkan) VGPU_TEST_BACKENDS=vulkan VK_LAYER_PATH=$PWD/$stage_dir/layers VGPU_VULKAN_VALIDATION=1 \
                  VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation "$bin/vgpu-test-user-shaders" 2>&1 | tee /tmp/us.log
                status=${PIPESTATUS[0]}
                if grep -qE "Validation Error|VUID-" /tmp/us.log; then status=99; fi ;;
        opengl) VGPU_TEST_BACKENDS=opengl "$bin/vgpu-test-user-shaders"; status=$? ;;
        *) VGPU_TEST_BACKENDS=opengl VGPU_GL_SPIRV=0 "$bin/vgpu-test-user-shaders"; status=$? ;;
      esac
      set -e
      summary+=("user_shaders.$run: $([ $status = 0 ] && echo passed || { [ $status = 77 ] && echo skipped || echo "FAILED ($status)"; })")
    done
    # Programs that test one backend per run (VGPU_TEST_BACKENDS), as ctest runs them; every
    # other program tests every device it finds in one run.
    for t in "$bin"/vgpu-test-*; do
      local name backends
      name=$(basename "$t")
      case $name in
        *-child|*-user-shaders) continue ;;
        vgpu-test-queue|vgpu-test-device-fault) backends="cpu vulkan opengl cuda" ;;
        vgpu-test-gpu-timeout) backends="vulkan opengl cuda" ;;
        *) backends=all ;;
      esac
      for backend in $backends; do
        local label=$name
        [ "$backend" = all ] || label="$name.$backend"
        echo "=== $label"
        set +e
        if [ "$backend" = all ]; then (cd "$bin" && "$t"); else (cd "$bin" && VGPU_TEST_BACKENDS=$backend "$t"); fi
        status=$?
        set -e
        summary+=("$label: $([ $status = 0 ] && echo passed || { [ $status = 77 ] && echo skipped || echo "FAILED ($status)"; })")
      done
    done
  } > "$OUT/tests.txt" 2>&1
  # The queue against separate calls, recovery against a cold start, the fixed cost per call
  # (roundtrip: N=16, 256-float multiply, batched, beside the issue-16 goals), the hot path: one file
  # (at most 8 files come back); round trip and arrays also write JSON ($json/bench-roundtrip.json,
  # $json/bench-arrays.json).
  {
    for b in queue recovery roundtrip arrays; do
      echo "=== vgpu-bench-$b"
      local args=()
      case $b in roundtrip|arrays) args=(--json "$json/bench-$b.json") ;; esac
      if [ -x "$bin/vgpu-bench-$b" ]; then "$bin/vgpu-bench-$b" "${args[@]}" || echo "bench-$b failed"; else echo "not built"; fi
    done
    if [ "$what" = all ]; then echo "=== vgpu-bench-dispatch --quick"; "$bin/vgpu-bench-dispatch" --quick || true; fi
  } > "$OUT/bench-calls.txt" 2>&1
  if [ "$what" = tests ]; then
    pack_json "$json" "$OUT/results-json.tar.gz" | tee -a "$OUT/bench-calls.txt"
    printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
    return
  fi
  "$bin/vgpu-bench-gpu" --json "$json/bench-gpu.json" > "$OUT/bench-gpu.txt" 2>&1 || echo "bench-gpu failed" >> "$OUT/bench-gpu.txt"
  # Device selection: the op × size table, then the probe's per-device bench and one select
  # (the second select in a new process reads the persisted choice).
  {
    "$bin/vgpu-bench-select" --json "$json/bench-select.json" || echo "bench-select failed"
    echo "=== vgpu-bench-predict (the prediction model vs measured, per device and size)"
    "$bin/vgpu-bench-predict" || echo "bench-predict failed"  # no --json: $OUT holds at most 8 files
    echo "=== vgpu-probe bench"
    "$bin/vgpu-probe" bench || echo "probe bench failed"
    echo "=== vgpu-probe select matmul 16 / 4096 (twice: calibrated, then persisted)"
    for n in 16 4096 16 4096; do "$bin/vgpu-probe" select matmul $n || echo "probe select failed"; done
    # Issue 17, a choice right in every process: 10 fresh processes each calibrate (choices in
    # memory only); the count per chosen device, then one process's candidates and notes.
    for n in 256 1024; do
      echo "=== 10 fresh processes: vgpu-probe select matmul $n (VGPU_CACHE_DISABLE=1), count per device"
      for i in 1 2 3 4 5 6 7 8 9 10; do
        VGPU_CACHE_DISABLE=1 "$bin/vgpu-probe" select --json matmul $n | grep -m1 '"device"' || echo "probe select failed"
      done | sort | uniq -c
      VGPU_CACHE_DISABLE=1 "$bin/vgpu-probe" select matmul $n || echo "probe select failed"
    done
  } > "$OUT/bench-select.txt" 2>&1
  pack_json "$json" "$OUT/results-json.tar.gz" | tee -a "$OUT/bench-calls.txt"
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  tail -8 "$OUT/bench-gpu.txt"
}

# remote observe (issue 34): device timing on every backend of the GPU machine, then the selection chart's JSON.
remote_observe() {
  local bin=$1 json=/tmp/vgpu-json-observe status summary=()
  rm -rf "$json" && mkdir -p "$json"
  {
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    "$bin/vgpu-probe" list || echo "probe list failed"
    for backend in cpu vulkan opengl cuda; do
      echo "=== device timing contract case on $backend"
      set +e
      (cd "$bin" && VGPU_TEST_BACKENDS=$backend "$bin/vgpu-test-backends" "$backend.device timing*")
      status=$?
      set -e
      summary+=("device_timing.$backend: $([ $status = 0 ] && echo passed || { [ $status = 77 ] && echo skipped || echo "FAILED ($status)"; })")
    done
    echo "=== vgpu-bench-roundtrip --quick"
    "$bin/vgpu-bench-roundtrip" --quick --json "$json/bench-roundtrip.json" || echo "bench-roundtrip failed"
    echo "=== VGPU_DEVICE_TIMING=1 vgpu-probe select matmul 1024 (fresh choice)"
    VGPU_DEVICE_TIMING=1 VGPU_CACHE_DISABLE=1 "$bin/vgpu-probe" select matmul 1024 || echo "probe select failed"
    echo "=== vgpu-bench-select --json"
    "$bin/vgpu-bench-select" --json "$json/bench-select.json" || echo "bench-select failed"
  } > "$OUT/observe.txt" 2>&1
  pack_json "$json" "$OUT/results-json-observe.tar.gz" | tee -a "$OUT/observe.txt"
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  grep -A8 "device time (Device" "$OUT/observe.txt" || true
}

# remote first (issue 17, the first call): process start -> first result per device against a
# main that only opens it, cold and warm, background on and off; the choice in fresh processes
# (vgpu-bench-select --quick --processes, and five `vgpu-probe select matmul 256` with empty
# caches); the prediction's error per device and size; which vendor libraries a process whose
# persisted choice is the CPU maps (LD_DEBUG=files).
remote_first() {
  local bin=$1
  {
    echo "=== vgpu-bench-first-call"
    "$bin/vgpu-bench-first-call" --runs 5 || echo "bench-first-call failed"
    echo "=== vgpu-bench-first-call --size 1024"
    "$bin/vgpu-bench-first-call" --runs 3 --size 1024 || echo "bench-first-call failed"
  } > "$OUT/first-call.txt" 2>&1
  {
    echo "=== vgpu-probe select matmul 256, five fresh processes with empty caches"
    for i in 1 2 3 4 5; do
      VGPU_CACHE_DIR=/tmp/vgpu-fresh-$i "$bin/vgpu-probe" select matmul 256 | head -3 || echo "probe select failed"
      rm -rf /tmp/vgpu-fresh-$i
    done
    echo "=== vgpu-bench-select --quick --processes ${VGPU_FIRST_PROCESSES:-20}"
    "$bin/vgpu-bench-select" --quick --processes "${VGPU_FIRST_PROCESSES:-20}" || echo "bench-select failed"
  } > "$OUT/select-processes.txt" 2>&1
  {
    echo "=== vgpu-bench-predict"
    if [ -x "$bin/vgpu-bench-predict" ]; then "$bin/vgpu-bench-predict" || echo "bench-predict failed"; else echo "not built"; fi
  } > "$OUT/predict.txt" 2>&1
  {
    echo "=== libraries a process maps when its persisted choice is cpu:0 (LD_DEBUG=files)"
    rm -rf /tmp/vgpu-lazy && mkdir -p /tmp/vgpu-lazy
    VGPU_CACHE_DIR=/tmp/vgpu-lazy VGPU_BACKGROUND=0 VGPU_DEVICE= "$bin/vgpu-demo" > /dev/null 2>&1 || true
    VGPU_CACHE_DIR=/tmp/vgpu-lazy "$bin/vgpu-probe" select matmul 16 | head -2
    VGPU_CACHE_DIR=/tmp/vgpu-lazy LD_DEBUG=files "$bin/vgpu-demo" 2>&1 >/dev/null | grep -E "calling init: .*(libvulkan|libEGL|libcuda|libGL)" | sort -u || true
    echo "(no lines above: none of libvulkan, libEGL, libGL, libcuda was loaded)"
  } > "$OUT/lazy.txt" 2>&1
  cat "$OUT/first-call.txt"
  tail -5 "$OUT/select-processes.txt"
}

# remote multi (issue 18): several GPUs of one host. The CUDA devices first (the goals: >= 1.8x on
# 2 GPUs for 64 x 2048^3 batched, >= 1.7x for one split 8192^3), then the Vulkan ones (same
# sizes), then the multi_device tests (N logical CPU devices, test backend, the GPUs' ICDs).
remote_multi() {
  local bin=$1
  {
    nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader || true
    nvidia-smi topo -m || true
    for kind in cuda vulkan; do
      echo "=== vgpu-bench-multi --backend $kind"
      "$bin/vgpu-bench-multi" --backend "$kind" --batch "${MULTI_BATCH:-64}" --size "${MULTI_SIZE:-2048}" \
        --split "${MULTI_SPLIT:-8192}" --runs 3 || echo "bench-multi failed"
    done
    echo "=== vgpu-test-multi-device"
    "$bin/vgpu-test-multi-device" || echo "multi-device tests failed"
    echo "=== vgpu-test-multi-queue"
    "$bin/vgpu-test-multi-queue" || echo "multi-queue tests failed"
  } > "$OUT/multi.txt" 2>&1
  cat "$OUT/multi.txt"
}

# remote ncu: the hardware counters of vgpu's CUDA matmul beside cuBLAS's SGEMM at N=4096 (issue 16:
# "what limits it, a profile, not a guess"). One product per process (vgpu-bench-gpu --profile), the
# first matching kernel profiled (-c 1); each run capped at 60 s, the step at ~3 minutes.
#   NCU_TILINGS  CUDA tilings profiled after the rule's pick (VGPU_MATMUL_TILING names; default
#                     two warp-tiled ones); NCU_SET=full: ncu's full set instead of the sections below.
remote_ncu() {
  local bin=$1 log=$OUT/ncu.txt ncu="" status summary=()
  for c in "$(command -v ncu || true)" /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu \
           /opt/nvidia/nsight-compute/*/ncu; do
    [ -n "$c" ] && [ -x "$c" ] && { ncu=$c; break; }
  done
  if [ -z "$ncu" ]; then
    echo "ncu: NOT FOUND (PATH, /usr/local/cuda/bin, /usr/local/cuda/nsight-compute*, /opt/nvidia/nsight-compute): no profile." \
         "Fix: install Nsight Compute on the GPU machine, or put ncu on PATH." | tee "$log"
    echo "ncu: missing" > "$OUT/summary.txt"
    return
  fi
  local what=(--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis
              --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section InstructionStats)
  [ "${NCU_SET:-}" = full ] && what=(--set full)
  local runs=("cublas|regex:.|" "vgpu|regex:vgpu_matmul|")  # cuBLAS names its kernels per size (gemm…, Kernel2)
  # NCU_TILINGS="" profiles the rule's pick alone; NCU_SIZES the sizes (default 4096).
  for t in ${NCU_TILINGS-128x128x8x8x8w32x64 128x256x8x8x16w32x128}; do runs+=("vgpu|regex:vgpu_matmul|$t"); done
  {
    echo "=== ncu: $ncu ($("$ncu" --version 2>&1 | tail -1))"
    for size in ${NCU_SIZES:-4096}; do
    for run in "${runs[@]}"; do
      IFS='|' read -r product kernel tiling <<< "$run"
      local label="$product${tiling:+ $tiling} N=$size"
      echo; echo "=== ncu $label (kernel $kernel)"
      set +e
      VGPU_MATMUL_TILING=$tiling timeout 60 "$ncu" --clock-control none "${what[@]}" -k "$kernel" -c 1 \
        "$bin/vgpu-bench-gpu" --profile "$product:$size" > /tmp/ncu-run.txt 2>&1
      status=$?
      set -e
      cat /tmp/ncu-run.txt
      if grep -q "ERR_NVGPUCTRPERM" /tmp/ncu-run.txt; then
        echo "ncu $label: NO PERMISSION for the GPU performance counters (ERR_NVGPUCTRPERM)." \
             "Fix: run as root or load the driver with NVreg_RestrictProfilingToAdminUsers=0."
        summary+=("ncu $label: no counter permission")
        continue
      fi
      summary+=("ncu $label: $([ $status = 0 ] && echo done || echo "FAILED ($status)")")
      # The lines that say what limits the kernel, one row per run in the summary below.
      grep -E "^ +(Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit Rate|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Executed Ipc Active|Block Limit Registers|Shared Memory Configuration Size|Grid Size) " \
        /tmp/ncu-run.txt | sed "s/^ */$label | /" >> /tmp/ncu-summary.txt || true
    done
    done
    echo; echo "=== summary (run | metric unit value)"
    cat /tmp/ncu-summary.txt 2>/dev/null || echo "(no metrics read)"
    rm -f /tmp/ncu-summary.txt
  } > "$log" 2>&1
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  tail -40 "$log"
}

# Runs "$@" without stopping the script when it fails, and appends "<label>: <word>" (its exit
# status 0) or "<label>: FAILED (<status>)" to the calling function's summary array.
record() {
  local label=$1 word=$2 status
  shift 2
  set +e
  "$@"
  status=$?
  set -e
  summary+=("$label: $([ $status = 0 ] && echo "$word" || echo "FAILED ($status)")")
}

# remote dtypes (issue 32): are the tensor-core kernels right, and how fast beside cuBLAS? The CUDA
# conformance cases that force every tensor-core tiling ([tf32] holds that case), the 16-bit, TF32
# and stacked cases, then vgpu-bench-dtypes on every device.
remote_dtypes() {
  local bin=$1 log=$OUT/dtypes.txt json=/tmp/vgpu-json-dtypes summary=()
  rm -rf "$json" && mkdir -p "$json"
  {
    echo "=== vgpu-conformance on CUDA: [dtype], [tf32], [stack] and the tensor-core tilings"
    record "conformance cuda dtype/tf32/stack" passed env VGPU_TEST_BACKENDS=cuda "$bin/vgpu-conformance" \
      "[dtype],[tf32],[stack]"
    echo; echo "=== vgpu-bench-dtypes"
    record bench-dtypes done "$bin/vgpu-bench-dtypes" --json "$json/bench-dtypes.json"
  } > "$log" 2>&1
  pack_json "$json" "$OUT/results-json-dtypes.tar.gz" | tee -a "$log"
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  tail -60 "$log"
}

# remote python: builds python/ as its own CMake project against the vgpu install prefix in
# .gpu/ with this machine's python3 (numpy) and pybind11 (Debian/Ubuntu package or pip), then runs
# the overhead benchmark, the pytest suite and bench/cpu_reference.py. Writes $OUT/python.txt (the build, the bench's
# table and pytest's output), $OUT/summary.txt and $OUT/results-json-python.tar.gz (python-bench.json,
# arrays-cpu.json, cpu-reference.json: one file, as at most 8 come back); every missing tool is
# named there with its fix, and the run still ends with the summary.
remote_python() {
  local log=$OUT/python.txt py build=/tmp/vgpu-python-build status summary=() json=/tmp/vgpu-json-python
  rm -rf "$json" && mkdir -p "$json"
  py=${VGPU_PYTHON:-$(command -v python3 || true)}
  {
    echo "=== python: ${py:-none} $([ -n "$py" ] && "$py" --version 2>&1)"
    local missing=()
    [ -n "$py" ] || missing+=("python3 (set VGPU_PYTHON=/path/to/python3)")
    command -v cmake >/dev/null || missing+=("cmake")
    [ -f "$PWD/$stage_dir/lib/cmake/vgpu/vgpuConfig.cmake" ] ||
      missing+=("the vgpu install prefix in $stage_dir/ (run tools/gpu-run.sh stage here first, carry [\".gpu\"])")
    local pybind11_dir=""
    if [ -n "$py" ]; then
      "$py" -c "import numpy; print('numpy', numpy.__version__)" || missing+=("numpy for $py (pip install numpy)")
      pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null || true)
      if [ -n "$pybind11_dir" ]; then echo "pybind11: $pybind11_dir"
      elif [ -f /usr/share/cmake/pybind11/pybind11Config.cmake ] || [ -d /usr/lib/cmake/pybind11 ]; then echo "pybind11: system package"
      else missing+=("pybind11 for $py (pip install pybind11, or apt install pybind11-dev)"); fi
    fi
    if ((${#missing[@]})); then
      echo "python: cannot build the module: missing ${missing[*]}"
      summary+=("python.build: FAILED (missing ${missing[*]})")
    else
      local gen=()
      command -v ninja >/dev/null && gen=(-G Ninja)
      set +e
      rm -rf "$build"
      cmake -S python -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -Dvgpu_DIR="$PWD/$stage_dir/lib/cmake/vgpu" \
        -DVGPU_DLPACK_INCLUDE_DIR="$PWD/$stage_dir/include" -DPython_EXECUTABLE="$py" ${pybind11_dir:+-Dpybind11_DIR="$pybind11_dir"} &&
        cmake --build "$build" -j"$(nproc)"
      status=$?
      set -e
      if [ $status != 0 ]; then
        summary+=("python.build: FAILED ($status)")
      else
        summary+=("python.build: passed")
        export PYTHONPATH=$build/python PATH=$bin:$PATH  # $bin: the staged glslc
        echo "=== import"
        "$py" -c "import vgpu, sys; print(vgpu.__version__, vgpu.__file__); print(vgpu.devices())" || true
        echo "=== bench/python_overhead.py (moderngl is not installed there: part 3 says so and skips)"
        set +e
        VGPU_BENCH_PYTHON_REF=$bin/vgpu-bench-python-ref "$py" bench/python_overhead.py --json "$json/python-bench.json"
        status=$?
        set -e
        summary+=("python.bench: $([ $status = 0 ] && echo passed || echo "FAILED ($status)")")
        echo "=== bench/arrays_cpu.py (the CPU tier against numpy and torch, DLPack exchange)"
        set +e
        PATH=$bin:$PATH "$py" bench/arrays_cpu.py --json "$json/arrays-cpu.json"
        status=$?
        set -e
        summary+=("python.arrays_cpu: $([ $status = 0 ] && echo passed || echo "FAILED ($status)")")
        echo "=== pytest tests/python"
        if "$py" -c "import pytest" 2>/dev/null; then
          set +e
          "$py" -m pytest tests/python -q -rs -p no:cacheprovider
          status=$?
          set -e
          summary+=("python.pytest: $([ $status = 0 ] && echo passed || echo "FAILED ($status)")")
        else
          echo "pytest is not installed for $py (pip install pytest)"
          summary+=("python.pytest: FAILED (no pytest for $py)")
        fi
      fi
    fi
    # The CPU fallback against numpy and torch (when importable) on this host's cores: needs
    # only numpy and the staged no-OpenBLAS C++ bench, so it runs even when the module did not build.
    if [ -n "$py" ] && "$py" -c "import numpy" 2>/dev/null; then
      echo "=== bench/cpu_reference.py"
      record python.cpu_reference passed "$py" bench/cpu_reference.py --bench "$bin/vgpu-bench-cpu-kernels" \
        --json "$json/cpu-reference.json"
    fi
  } > "$log" 2>&1
  pack_json "$json" "$OUT/results-json-python.tar.gz" | tee -a "$log"
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  grep -E "^(Python − C\+\+|Python / numpy)" "$log" || true
  tail -3 "$log"
}

case "${1:-}" in
  stage) stage ;;
  remote) remote "${2:-all}" ;;
  *) echo "usage: tools/gpu-run.sh stage|remote" >&2; exit 2 ;;
esac
