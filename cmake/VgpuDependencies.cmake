# Every dependency comes from a Debian package, found here; nothing is downloaded.

find_package(Threads REQUIRED)
find_package(TBB REQUIRED)

# xsimd 8.1's exported target links a nonexistent "xtl" target; give it an empty one.
if(NOT TARGET xtl)
  add_library(xtl INTERFACE IMPORTED)
endif()
find_package(xsimd REQUIRED)

find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
add_library(vgpu_xxhash INTERFACE)
target_link_libraries(vgpu_xxhash INTERFACE PkgConfig::XXHASH)

find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)

# Backends: AUTO turns a backend on where its build-time dependencies exist.
function(vgpu_resolve_backend var found what)
  if(${var} STREQUAL "AUTO")
    if(${found})
      set(${var} ON PARENT_SCOPE)
      message(STATUS "vgpu: ${var}=ON (${what} found)")
    else()
      set(${var} OFF PARENT_SCOPE)
      message(STATUS "vgpu: ${var}=OFF (${what} not found)")
    endif()
  elseif(${var} AND NOT ${found})
    message(FATAL_ERROR "vgpu: ${var}=ON but ${what} was not found")
  endif()
endfunction()

# The backends themselves arrive in later milestones; until their sources exist they stay OFF
# so a build never claims a backend it does not contain.
set(VGPU_OPENGL_DEPS_FOUND FALSE)
set(VGPU_VULKAN_DEPS_FOUND FALSE)
set(VGPU_CUDA_DEPS_FOUND FALSE)
vgpu_resolve_backend(VGPU_WITH_OPENGL VGPU_OPENGL_DEPS_FOUND "the OpenGL backend sources")
vgpu_resolve_backend(VGPU_WITH_VULKAN VGPU_VULKAN_DEPS_FOUND "the Vulkan backend sources")
vgpu_resolve_backend(VGPU_WITH_CUDA VGPU_CUDA_DEPS_FOUND "the CUDA backend sources")
