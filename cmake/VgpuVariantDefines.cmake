# SPDX-License-Identifier: Apache-2.0
# vgpu_variant_defines(<what> <variant> <text> <out_defines> <out_init>): splits the define part
# of a precompiled-variant string ("NAME=VALUE,NAME=VALUE", may be empty) into a list of
# NAME=VALUE items and the C++ std::map initialiser for them ('{"NAME", "VALUE"}, ...'); a part
# that is not NAME=VALUE stops the configure, naming <what> (the list it came from) and <variant>.
# Used by VgpuGlsl.cmake (L3 SPIR-V) and VgpuCuda.cmake (L3 fatbins).
function(vgpu_variant_defines what variant text out_defines out_init)
  set(defines "")
  set(init "")
  if(NOT text STREQUAL "")
    string(REPLACE "," ";" defines "${text}")
    foreach(def IN LISTS defines)
      if(NOT def MATCHES "^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
        message(FATAL_ERROR "${what}: '${def}' in '${variant}' is not NAME=VALUE")
      endif()
      string(APPEND init "{\"${CMAKE_MATCH_1}\", \"${CMAKE_MATCH_2}\"}, ")
    endforeach()
  endif()
  set(${out_defines} "${defines}" PARENT_SCOPE)
  set(${out_init} "${init}" PARENT_SCOPE)
endfunction()
