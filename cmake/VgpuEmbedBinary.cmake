# SPDX-License-Identifier: Apache-2.0
# cmake -P script: writes a file's bytes as a comma-separated list of unsigned char literals,
# for #include inside an array initialiser.
#   cmake -DINPUT=<file> -DOUTPUT=<file.inc> -P VgpuEmbedBinary.cmake
foreach(var INPUT OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "VgpuEmbedBinary.cmake: -D${var}=... is required")
  endif()
endforeach()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
if(length EQUAL 0)
  message(FATAL_ERROR "VgpuEmbedBinary.cmake: ${INPUT} is empty")
endif()
# 32 bytes per line keeps the generated file diffable and the compiler's lines short.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x..," 32 line)  # CMake regexes have no {n} repetition
string(REGEX REPLACE "(${line})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "${bytes}\n")
