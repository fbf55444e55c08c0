# SPDX-License-Identifier: Apache-2.0
# Included by the cmake -P embedding scripts: vgpu_write_if_changed(<file> <content>) rewrites
# file only when its text differs, so unchanged kernels recompile nothing.
function(vgpu_write_if_changed file content)
  set(old "")
  if(EXISTS "${file}")
    file(READ "${file}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${file}" "${content}")
  endif()
endfunction()
