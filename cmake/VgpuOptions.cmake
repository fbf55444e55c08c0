# Build options: backends (auto-detected in VgpuDependencies.cmake), sanitizers, warnings.

set(VGPU_WITH_OPENGL "AUTO" CACHE STRING "Build the OpenGL backend (ON, OFF, AUTO)")
set(VGPU_WITH_VULKAN "AUTO" CACHE STRING "Build the Vulkan backend (ON, OFF, AUTO)")
set(VGPU_WITH_CUDA "AUTO" CACHE STRING "Build the CUDA backend (ON, OFF, AUTO)")
set(VGPU_SANITIZE "" CACHE STRING "Sanitizer to build with: address, undefined, thread or empty")
set_property(CACHE VGPU_SANITIZE PROPERTY STRINGS "" address undefined thread)
option(BUILD_SHARED_LIBS "Build libvgpu as a shared library" ON)

add_library(vgpu_warnings INTERFACE)
target_compile_options(vgpu_warnings INTERFACE -Wall -Wextra -Wpedantic)

if(VGPU_SANITIZE)
  if(NOT VGPU_SANITIZE MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "VGPU_SANITIZE must be address, undefined or thread (got '${VGPU_SANITIZE}')")
  endif()
  add_compile_options(-fsanitize=${VGPU_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${VGPU_SANITIZE})
endif()
