# SPDX-License-Identifier: Apache-2.0
# vgpu_embed_kernel_text(): embeds the built-in kernels' text of one language into vgpu_kernels.
# Used by VgpuGlsl.cmake and VgpuCuda.cmake. A command runs SCRIPT (cmake -P, given
# -D<DIR_VAR>=DIR -DNAMES=<a,b,...> -DOUTPUT=OUTPUT) whenever a kernel file DIR/<name>.EXT, an
# EXTRA_INPUTS file or the script changes; it writes OUTPUT, which SOURCE (added to
# vgpu_kernels) includes. The custom target TARGET alone drives the command, so two consumers
# (vgpu_kernels, a host tool) never run it twice at once.
function(vgpu_embed_kernel_text)
  cmake_parse_arguments(E "" "LANGUAGE;DIR_VAR;DIR;EXT;SCRIPT;OUTPUT;SOURCE;TARGET" "NAMES;EXTRA_INPUTS" ${ARGN})
  set(inputs ${E_EXTRA_INPUTS})
  foreach(name IN LISTS E_NAMES)
    list(APPEND inputs ${E_DIR}/${name}.${E_EXT})
  endforeach()
  list(JOIN E_NAMES "," names)
  get_filename_component(out_dir ${E_OUTPUT} DIRECTORY)
  add_custom_command(
    OUTPUT ${E_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -D${E_DIR_VAR}=${E_DIR} -DNAMES=${names} -DOUTPUT=${E_OUTPUT} -P ${E_SCRIPT}
    DEPENDS ${inputs} ${E_SCRIPT} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/VgpuWriteIfChanged.cmake
    COMMENT "Embedding the built-in ${E_LANGUAGE} kernels"
    VERBATIM)
  add_custom_target(${E_TARGET} DEPENDS ${E_OUTPUT})
  target_sources(vgpu_kernels PRIVATE ${E_SOURCE})
  target_include_directories(vgpu_kernels PRIVATE ${out_dir})
  add_dependencies(vgpu_kernels ${E_TARGET})
endfunction()
