# SPDX-License-Identifier: Apache-2.0
# Built-in GLSL kernels (core/kernels/glsl/) and the GLSL toolchain. Included by the top-level
# CMakeLists.txt after core/ defined the layer vgpu_kernels.
#  - Always: their text is embedded into vgpu_kernels (kernels::builtin_glsl, kernels::glsl_prelude),
#    regenerated whenever a .comp or the prelude changes.
#  - L3 (only with VGPU_WITH_VULKAN): each built-in variant is assembled by the host tool
#    vgpu-glsl-assemble (the very assemble_glsl vgpu runs), compiled by glslc, and its SPIR-V
#    words embedded in a generated table (vgpu/cache/precompiled.hpp). Without Vulkan the
#    table is empty.
#  - Run-time GLSL compiler (with VGPU_WITH_VULKAN or VGPU_WITH_OPENGL): interface target
#    vgpu_glsl_compiler (shaderc's static archives, their symbols kept out of libvgpu's
#    exports), linked by the shader layer (core/shader/CMakeLists.txt).
#    vgpu_shaderc is the bare archives (+ include dir), for tests that call shaderc directly.

include(${CMAKE_CURRENT_LIST_DIR}/VgpuVariantDefines.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedKernelText.cmake)

set(VGPU_GLSL_DIR ${PROJECT_SOURCE_DIR}/core/kernels/glsl)
set(VGPU_GLSL_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated/glsl)
# Built-in kernels, by file name: core/kernels/glsl/<name>.comp.
set(VGPU_GLSL_BUILTINS axpy convert elementwise matmul matmul_coopmat matmul_splitk_reduce reduce_sum softmax_rows)
# Precompiled variants: "<kernel>" or "<kernel>:<NAME>=<VALUE>[,<NAME>=<VALUE>...]", exactly the
# (body, defines) pairs core/runtime/kernel_cache/ops.cpp compiles.
# The matmul variants are core/kernels/src/gpu_tuning.cpp's kTilings (64x64x16x4x4 is the plain one),
# the matmul_coopmat ones core/kernels/src/coopmat_tuning.cpp's.
set(VGPU_GLSL_PRECOMPILED
    matmul
    matmul:VGPU_MM_NAIVE=1
    matmul:VGPU_MM_BM=32,VGPU_MM_BN=32,VGPU_MM_BK=16,VGPU_MM_TM=4,VGPU_MM_TN=4
    matmul:VGPU_MM_BM=128,VGPU_MM_BN=64,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=4
    matmul:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=8,VGPU_MM_TM=8,VGPU_MM_TN=8
    matmul:VGPU_MM_BM=128,VGPU_MM_BN=128,VGPU_MM_BK=16,VGPU_MM_TM=8,VGPU_MM_TN=8
    matmul_coopmat:VGPU_CM_BM=128,VGPU_CM_BN=128,VGPU_CM_BK=32,VGPU_CM_WM=64,VGPU_CM_WN=32
    matmul_coopmat:VGPU_CM_BM=128,VGPU_CM_BN=64,VGPU_CM_BK=32,VGPU_CM_WM=64,VGPU_CM_WN=32
    matmul_coopmat:VGPU_CM_BM=64,VGPU_CM_BN=64,VGPU_CM_BK=32,VGPU_CM_WM=32,VGPU_CM_WN=32
    matmul_coopmat:VGPU_CM_BM=128,VGPU_CM_BN=128,VGPU_CM_BK=32,VGPU_CM_WM=64,VGPU_CM_WN=64
    matmul_splitk_reduce
    axpy
    reduce_sum
    softmax_rows
    softmax_rows:VGPU_SOFTMAX_SPLIT=1
    elementwise:VGPU_OP=0
    elementwise:VGPU_OP=1
    convert:VGPU_CONVERT_NARROW=0
    convert:VGPU_CONVERT_NARROW=1)

file(MAKE_DIRECTORY ${VGPU_GLSL_GENERATED_DIR})

# --- Embedded GLSL text -------------------------------------------------------------------
set(VGPU_GLSL_EMBEDDED ${VGPU_GLSL_GENERATED_DIR}/vgpu_glsl_embedded.inc)
vgpu_embed_kernel_text(
  LANGUAGE GLSL DIR_VAR GLSL_DIR DIR ${VGPU_GLSL_DIR} EXT comp NAMES ${VGPU_GLSL_BUILTINS}
  EXTRA_INPUTS ${VGPU_GLSL_DIR}/prelude.glsl
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/VgpuEmbedGlsl.cmake OUTPUT ${VGPU_GLSL_EMBEDDED}
  SOURCE ${PROJECT_SOURCE_DIR}/core/kernels/src/glsl_source.cpp TARGET vgpu_glsl_embedded)

# --- L3: precompiled SPIR-V ---------------------------------------------------------------
set(VGPU_PRECOMPILED_WORDS "")
set(VGPU_PRECOMPILED_ENTRIES "")
if(VGPU_WITH_VULKAN)
  # Host tool: the same glsl_source.cpp as vgpu_kernels, so the text glslc compiles is byte-identical.
  add_executable(vgpu-glsl-assemble
    ${PROJECT_SOURCE_DIR}/core/kernels/src/glsl_assemble_main.cpp
    ${PROJECT_SOURCE_DIR}/core/kernels/src/glsl_source.cpp
    ${PROJECT_SOURCE_DIR}/core/base/src/error.cpp)
  target_include_directories(vgpu-glsl-assemble PRIVATE
    ${PROJECT_SOURCE_DIR}/core/kernels/include ${PROJECT_SOURCE_DIR}/core/base/include ${VGPU_GLSL_GENERATED_DIR})
  target_link_libraries(vgpu-glsl-assemble PRIVATE vgpu_warnings)
  # Its own copy of the base layer's error type: VGPU_API must not mark it imported from
  # libvgpu (on Windows a dllimport that nothing provides).
  target_compile_definitions(vgpu-glsl-assemble PRIVATE VGPU_STATIC_DEFINE)
  add_dependencies(vgpu-glsl-assemble vgpu_glsl_embedded)

  set(spirv_dir ${VGPU_GLSL_GENERATED_DIR}/spirv)
  file(MAKE_DIRECTORY ${spirv_dir})
  set(spirv_outputs "")
  set(index 0)
  foreach(variant IN LISTS VGPU_GLSL_PRECOMPILED)
    string(REPLACE ":" ";" parts "${variant}")
    list(GET parts 0 kernel)
    set(defines "")
    list(LENGTH parts nparts)
    if(nparts GREATER 1)
      list(GET parts 1 defines)
    endif()
    # vgpu-glsl-assemble takes the defines as NAME=VALUE arguments.
    vgpu_variant_defines(VGPU_GLSL_PRECOMPILED "${variant}" "${defines}" define_args define_init)
    string(MAKE_C_IDENTIFIER "${variant}" stem)
    set(comp ${spirv_dir}/${stem}.comp)
    set(num ${spirv_dir}/${stem}.spv.num)
    add_custom_command(
      OUTPUT ${num}
      BYPRODUCTS ${comp}
      COMMAND vgpu-glsl-assemble ${kernel} ${comp} ${define_args}
      COMMAND ${VGPU_GLSLC} -O --target-env=vulkan1.1 -fshader-stage=compute -mfmt=num -o ${num} ${comp}
      DEPENDS vgpu-glsl-assemble
      COMMENT "glslc: built-in GLSL kernel ${variant} -> SPIR-V"
      VERBATIM)
    list(APPEND spirv_outputs ${num})
    string(APPEND VGPU_PRECOMPILED_WORDS
           "const std::uint32_t kWords${index}[] = {\n#include \"spirv/${stem}.spv.num\"\n};  // ${variant}\n")
    string(APPEND VGPU_PRECOMPILED_ENTRIES
           "      {\"${kernel}\", {${define_init}}, words(kWords${index})},\n")
    math(EXPR index "${index} + 1")
  endforeach()
  add_custom_target(vgpu_glsl_spirv DEPENDS ${spirv_outputs})
  add_dependencies(vgpu_kernels vgpu_glsl_spirv)
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/VgpuPrecompiledSpirv.cpp.in
               ${VGPU_GLSL_GENERATED_DIR}/precompiled_spirv.cpp @ONLY)
target_sources(vgpu_kernels PRIVATE ${VGPU_GLSL_GENERATED_DIR}/precompiled_spirv.cpp)

# --- Run-time GLSL compiler ---------------------------------------------------------------
if(VGPU_WITH_VULKAN OR VGPU_WITH_OPENGL)
  # The bare archives, for code that calls shaderc itself (tests checking the OpenGL flavour).
  add_library(vgpu_shaderc INTERFACE)
  target_include_directories(vgpu_shaderc SYSTEM INTERFACE ${VGPU_SHADERC_INCLUDE_DIR})
  target_link_libraries(vgpu_shaderc INTERFACE ${VGPU_SHADERC_LIBRARIES} Threads::Threads)

  # What linking vgpu_glsl_compiler gives: shaderc's archives and include directory (the shader
  # layer, core/shader, links it). IMPORTED, so install(EXPORT) never asks for it to join the
  # export set.
  add_library(vgpu_glsl_compiler INTERFACE IMPORTED)
  set_target_properties(vgpu_glsl_compiler PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${VGPU_SHADERC_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES "${VGPU_SHADERC_LIBRARIES};Threads::Threads"
    # glslang and SPIRV-Tools must not leak out of a shared libvgpu: an application with its
    # own copy would otherwise bind to ours, or ours to theirs.
    INTERFACE_LINK_OPTIONS "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,SHARED_LIBRARY>:LINKER:--exclude-libs,ALL>")
endif()
