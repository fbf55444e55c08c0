# SPDX-License-Identifier: Apache-2.0
# Built-in CUDA kernels (core/kernels/cuda/<name>.cu). Included by the top-level CMakeLists.txt
# after core/ defined the layer vgpu_kernels.
#  - Always: their text is embedded into vgpu_kernels (kernels::builtin_cuda), which NVRTC compiles at
#    run time; regenerated whenever a .cu changes.
#  - L3 (VGPU_WITH_CUDA, and nvcc found unless VGPU_CUDA_FATBIN=OFF): every variant that
#    core/runtime/kernel_cache/ops.cpp compiles is built by nvcc into a fatbin — SASS for each architecture in
#    VGPU_CUDA_FATBIN_ARCHS plus PTX for the newest, which newer GPUs JIT — and embedded in a
#    generated table (vgpu/cache/precompiled.hpp), so built-in ops need no NVRTC at all.

include(${CMAKE_CURRENT_LIST_DIR}/VgpuVariantDefines.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedKernelText.cmake)

set(VGPU_CUDA_DIR ${PROJECT_SOURCE_DIR}/core/kernels/cuda)
set(VGPU_CUDA_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated/cuda)
# copy_segments is the CUDA backend's own (small round trips), not an op.
set(VGPU_CUDA_BUILTINS axpy convert elementwise matmul matmul_mma matmul_wgmma reduce_sum softmax_rows copy_segments)
# Precompiled variants, "<kernel>@<X>x<Y>x<Z>[:NAME=VALUE,...]": exactly the (kernel, block
# size, defines) triples core/runtime/kernel_cache/ops.cpp compiles for CUDA (every tiling of cuda_matmul_tilings(),
# backends/cuda/cuda_op_tuner.cpp), and
# the backend's copy kernel (backends/cuda/cuda_round_trip.cpp);
# tests/backends/cuda_nvrtc_test.cpp checks that every built-in plan finds its variant.
set(VGPU_CUDA_PRECOMPILED
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=8"
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=64,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=4"
    "matmul@16x16x1:VGPU_MM_BM=64,VGPU_MM_BN=64,VGPU_MM_BK=16,VGPU_MM_TM=4,VGPU_MM_TN=4"
    # Warp-tiled (issue 16): candidates of the measured choice (backends/cuda/cuda_op_tuner.cpp kTilings).
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=8,VGPU_MM_WM=32,VGPU_MM_WN=64"
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=16,VGPU_MM_TM=8,VGPU_MM_TN=8,VGPU_MM_WM=32,VGPU_MM_WN=64"
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=256,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=16,VGPU_MM_WM=32,VGPU_MM_WN=128,VGPU_MM_MIN_BLOCKS=1"
    "matmul@16x16x1:VGPU_MM_BM=256,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=16,VGPU_MM_TN=8,VGPU_MM_WM=64,VGPU_MM_WN=64,VGPU_MM_MIN_BLOCKS=1"
    "matmul@8x16x1:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=16,VGPU_MM_WM=32,VGPU_MM_WN=128"
    "matmul@8x8x1:VGPU_MM_BM=64,VGPU_MM_BN=64,VGPU_MM_BK=16,VGPU_MM_TM=8,VGPU_MM_TN=8,VGPU_MM_WM=32,VGPU_MM_WN=64"
    "matmul@16x8x1:VGPU_MM_BM=64,VGPU_MM_BN=64,VGPU_MM_BK=16,VGPU_MM_TM=8,VGPU_MM_TN=4,VGPU_MM_WM=32,VGPU_MM_WN=32"
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=64,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=4,VGPU_MM_WM=32,VGPU_MM_WN=32"
    "matmul@16x16x1:VGPU_MM_BM=64,VGPU_MM_BN=64,VGPU_MM_BK=16,VGPU_MM_TM=4,VGPU_MM_TN=4,VGPU_MM_WM=16,VGPU_MM_WN=32"
    # 3-stage cp.async pipelines (VGPU_MM_STAGES, issue 16).
    "matmul@16x16x1:VGPU_MM_BM=256,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=16,VGPU_MM_TN=8,VGPU_MM_WM=64,VGPU_MM_WN=64,VGPU_MM_MIN_BLOCKS=1,VGPU_MM_STAGES=3"
    "matmul@16x16x1:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=16,VGPU_MM_TM=8,VGPU_MM_TN=8,VGPU_MM_WM=32,VGPU_MM_WN=64,VGPU_MM_MIN_BLOCKS=1,VGPU_MM_STAGES=3"
    # Tensor-core matmuls of 16-bit operands (backends/cuda/cuda_op_tuner.cpp kMmaTilings), f16 and bf16.
    "matmul_mma@256x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=2,VGPU_MMA_BF16=0"
    "matmul_mma@256x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=2,VGPU_MMA_BF16=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=64,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=0"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=64,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=64,VGPU_MMA_BN=64,VGPU_MMA_BK=32,VGPU_MMA_WM=32,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=0"
    "matmul_mma@128x1x1:VGPU_MMA_BM=64,VGPU_MMA_BN=64,VGPU_MMA_BK=32,VGPU_MMA_WM=32,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=64,VGPU_MMA_STAGES=2,VGPU_MMA_BF16=0"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=32,VGPU_MMA_WM=64,VGPU_MMA_WN=64,VGPU_MMA_STAGES=2,VGPU_MMA_BF16=1"
    "matmul_mma@256x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=256,VGPU_MMA_BK=16,VGPU_MMA_WM=64,VGPU_MMA_WN=64,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=0"
    "matmul_mma@256x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=256,VGPU_MMA_BK=16,VGPU_MMA_WM=64,VGPU_MMA_WN=64,VGPU_MMA_STAGES=3,VGPU_MMA_BF16=1"
    # Warpgroup MMA on sm_90 (backends/cuda/cuda_op_tuner.cpp kHopperTilings), f16 and bf16:
    # sm_90a SASS only (VGPU_CUDA_ARCH_SPECIFIC_KERNELS), built when 90 is in VGPU_CUDA_FATBIN_ARCHS.
    "matmul_wgmma@256x1x1:VGPU_WG_BN=256,VGPU_WG_STAGES=4,VGPU_WG_BF16=0"
    "matmul_wgmma@256x1x1:VGPU_WG_BN=256,VGPU_WG_STAGES=4,VGPU_WG_BF16=1"
    "matmul_wgmma@256x1x1:VGPU_WG_BN=128,VGPU_WG_STAGES=6,VGPU_WG_BF16=0"
    "matmul_wgmma@256x1x1:VGPU_WG_BN=128,VGPU_WG_STAGES=6,VGPU_WG_BF16=1"
    "matmul_wgmma@384x1x1:VGPU_WG_BN=256,VGPU_WG_STAGES=4,VGPU_WG_BF16=0,VGPU_WG_SPECIALIZED=1"
    "matmul_wgmma@384x1x1:VGPU_WG_BN=256,VGPU_WG_STAGES=4,VGPU_WG_BF16=1,VGPU_WG_SPECIALIZED=1"
    "matmul_wgmma@384x1x1:VGPU_WG_BN=128,VGPU_WG_STAGES=6,VGPU_WG_BF16=0,VGPU_WG_SPECIALIZED=1"
    "matmul_wgmma@384x1x1:VGPU_WG_BN=128,VGPU_WG_STAGES=6,VGPU_WG_BF16=1,VGPU_WG_SPECIALIZED=1"
    # TF32 (matmul_tf32 on float32, backends/cuda/cuda_op_tuner.cpp kTf32Tilings).
    "matmul_mma@256x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=16,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=2,VGPU_MMA_TF32=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=64,VGPU_MMA_BK=16,VGPU_MMA_WM=64,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_TF32=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=64,VGPU_MMA_BN=64,VGPU_MMA_BK=16,VGPU_MMA_WM=32,VGPU_MMA_WN=32,VGPU_MMA_STAGES=3,VGPU_MMA_TF32=1"
    "matmul_mma@128x1x1:VGPU_MMA_BM=128,VGPU_MMA_BN=128,VGPU_MMA_BK=16,VGPU_MMA_WM=64,VGPU_MMA_WN=64,VGPU_MMA_STAGES=2,VGPU_MMA_TF32=1"
    "axpy@256x1x1"
    "elementwise@256x1x1:VGPU_OP=0"
    "elementwise@256x1x1:VGPU_OP=1"
    "reduce_sum@256x1x1"
    "softmax_rows@256x1x1"
    "convert@256x1x1:VGPU_CONVERT_NARROW=0"
    "convert@256x1x1:VGPU_CONVERT_NARROW=1"
    "copy_segments@256x1x1")
# Kernels that use architecture-specific instructions (sm_90a: wgmma): their fatbins hold sm_90a
# SASS alone (no PTX: an "a" target's PTX runs on no other GPU), and none when 90 is not in
# VGPU_CUDA_FATBIN_ARCHS; NVRTC compiles them for sm_90a at run time otherwise.
set(VGPU_CUDA_ARCH_SPECIFIC_KERNELS matmul_wgmma)
set(VGPU_CUDA_FATBIN "AUTO" CACHE STRING "Embed nvcc-built fatbins of the built-in CUDA kernels (ON, OFF, AUTO)")
set(VGPU_CUDA_FATBIN_ARCHS "75;80;86;89;90" CACHE STRING
    "SM architectures the built-in CUDA fatbin holds SASS for (PTX is added for the last)")
# nvcc --compress-mode: "size" makes the embedded fatbins 3.5x smaller (libvgpu 6.4 -> 4.2 MB
# stripped) and needs a driver that reads such fatbins (r550 and later); an older driver
# refuses them and vgpu compiles the built-ins with NVRTC instead (cuda_kernels.cpp warns once).
set(VGPU_CUDA_FATBIN_COMPRESS "size" CACHE STRING
    "nvcc --compress-mode of the embedded fatbins (default, size, speed, balance, none)")

file(MAKE_DIRECTORY ${VGPU_CUDA_GENERATED_DIR})

# --- Embedded CUDA text -------------------------------------------------------------------
set(VGPU_CUDA_EMBEDDED ${VGPU_CUDA_GENERATED_DIR}/vgpu_cuda_embedded.inc)
vgpu_embed_kernel_text(
  LANGUAGE CUDA DIR_VAR CUDA_DIR DIR ${VGPU_CUDA_DIR} EXT cu NAMES ${VGPU_CUDA_BUILTINS}
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedCuda.cmake OUTPUT ${VGPU_CUDA_EMBEDDED}
  SOURCE ${PROJECT_SOURCE_DIR}/core/kernels/src/cuda_source.cpp TARGET vgpu_cuda_embedded)

# --- L3: precompiled fatbins --------------------------------------------------------------
set(VGPU_CUDA_FATBIN_ENABLED OFF)
if(VGPU_WITH_CUDA AND NOT VGPU_CUDA_FATBIN STREQUAL "OFF")
  find_program(VGPU_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
  if(VGPU_NVCC)
    set(VGPU_CUDA_FATBIN_ENABLED ON)
  elseif(VGPU_CUDA_FATBIN STREQUAL "ON")
    message(FATAL_ERROR "vgpu: VGPU_CUDA_FATBIN=ON but nvcc was not found (set CUDA_HOME or VGPU_NVCC)")
  endif()
endif()
if(VGPU_CUDA_FATBIN_ENABLED)
  message(STATUS "vgpu: CUDA L3 fatbin: ON (${VGPU_NVCC}, SASS for sm ${VGPU_CUDA_FATBIN_ARCHS})")
elseif(VGPU_WITH_CUDA)
  message(STATUS "vgpu: CUDA L3 fatbin: OFF (no nvcc, or VGPU_CUDA_FATBIN=OFF): built-ins compile with NVRTC")
endif()

set(VGPU_CUDA_FATBIN_ARRAYS "")
set(VGPU_CUDA_FATBIN_ENTRIES "")
if(VGPU_CUDA_FATBIN_ENABLED)
  set(gencode "")
  list(GET VGPU_CUDA_FATBIN_ARCHS -1 newest)
  foreach(arch IN LISTS VGPU_CUDA_FATBIN_ARCHS)
    if(arch STREQUAL newest)
      list(APPEND gencode -gencode "arch=compute_${arch},code=[sm_${arch},compute_${arch}]")
    else()
      list(APPEND gencode -gencode "arch=compute_${arch},code=sm_${arch}")
    endif()
  endforeach()
  set(fatbin_dir ${VGPU_CUDA_GENERATED_DIR}/fatbin)
  file(MAKE_DIRECTORY ${fatbin_dir})
  set(fatbin_outputs "")
  set(index 0)
  foreach(variant IN LISTS VGPU_CUDA_PRECOMPILED)
    if(NOT variant MATCHES "^([a-z_]+)@([0-9]+)x([0-9]+)x([0-9]+)(:(.*))?$")
      message(FATAL_ERROR "VGPU_CUDA_PRECOMPILED: '${variant}' is not <kernel>@<X>x<Y>x<Z>[:NAME=VALUE,...]")
    endif()
    set(kernel ${CMAKE_MATCH_1})
    set(wg "${CMAKE_MATCH_2}, ${CMAKE_MATCH_3}, ${CMAKE_MATCH_4}")
    set(variant_gencode ${gencode})
    if(kernel IN_LIST VGPU_CUDA_ARCH_SPECIFIC_KERNELS)
      if(NOT "90" IN_LIST VGPU_CUDA_FATBIN_ARCHS)
        continue()
      endif()
      set(variant_gencode -gencode "arch=compute_90a,code=sm_90a")
    endif()
    # The same -D options NVRTC gets (backends/cuda/cuda_nvrtc.cpp): the block size, then the plan's defines.
    set(define_args -DVGPU_LOCAL_SIZE_X=${CMAKE_MATCH_2} -DVGPU_LOCAL_SIZE_Y=${CMAKE_MATCH_3}
                    -DVGPU_LOCAL_SIZE_Z=${CMAKE_MATCH_4})
    vgpu_variant_defines(VGPU_CUDA_PRECOMPILED "${variant}" "${CMAKE_MATCH_6}" defines define_init)
    list(TRANSFORM defines PREPEND -D)
    list(APPEND define_args ${defines})
    set(fatbin ${fatbin_dir}/variant${index}.fatbin)
    set(inc ${fatbin_dir}/variant${index}.inc)
    add_custom_command(
      OUTPUT ${inc}
      BYPRODUCTS ${fatbin}
      COMMAND ${VGPU_NVCC} -fatbin -O3 --compress-mode=${VGPU_CUDA_FATBIN_COMPRESS} ${variant_gencode} ${define_args} -o ${fatbin} ${VGPU_CUDA_DIR}/${kernel}.cu
      COMMAND ${CMAKE_COMMAND} -DINPUT=${fatbin} -DOUTPUT=${inc} -P ${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedBinary.cmake
      DEPENDS ${VGPU_CUDA_DIR}/${kernel}.cu ${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedBinary.cmake
      COMMENT "nvcc: built-in CUDA kernel ${variant} -> fatbin"
      VERBATIM)
    list(APPEND fatbin_outputs ${inc})
    string(APPEND VGPU_CUDA_FATBIN_ARRAYS
           "alignas(8) const std::uint8_t kFatbin${index}[] = {\n#include \"fatbin/variant${index}.inc\"\n};  // ${variant}\n")
    string(APPEND VGPU_CUDA_FATBIN_ENTRIES
           "      {\"${kernel}\", {${wg}}, {${define_init}}, std::span<const std::uint8_t>(kFatbin${index})},\n")
    math(EXPR index "${index} + 1")
  endforeach()
  add_custom_target(vgpu_cuda_fatbin DEPENDS ${fatbin_outputs})
  add_dependencies(vgpu_kernels vgpu_cuda_fatbin)
  list(JOIN VGPU_CUDA_FATBIN_ARCHS ", " VGPU_CUDA_FATBIN_ARCH_TEXT)
else()
  set(VGPU_CUDA_FATBIN_ARCH_TEXT "")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/VgpuPrecompiledCuda.cpp.in
               ${VGPU_CUDA_GENERATED_DIR}/precompiled_cuda.cpp @ONLY)
target_sources(vgpu_kernels PRIVATE ${VGPU_CUDA_GENERATED_DIR}/precompiled_cuda.cpp)
