# SPDX-License-Identifier: Apache-2.0
# Findxxhash: xxhash::xxhash, the xxHash library (Debian: libxxhash-dev, which ships a .pc file
# but no CMake config). Installed with vgpu and used by vgpuConfig.cmake for a static libvgpu,
# whose XXH3_* references its users must link. Sets xxhash_FOUND, xxhash_INCLUDE_DIR and
# xxhash_LIBRARY (cache variables: point them at another xxHash).
find_path(xxhash_INCLUDE_DIR NAMES xxhash.h)
find_library(xxhash_LIBRARY NAMES xxhash)
mark_as_advanced(xxhash_INCLUDE_DIR xxhash_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxhash REQUIRED_VARS xxhash_LIBRARY xxhash_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "a static libvgpu links xxHash. Fix: install libxxhash-dev or set xxhash_LIBRARY and xxhash_INCLUDE_DIR.")
if(xxhash_FOUND AND NOT TARGET xxhash::xxhash)
  add_library(xxhash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxhash::xxhash PROPERTIES IMPORTED_LOCATION "${xxhash_LIBRARY}"
                                                  INTERFACE_INCLUDE_DIRECTORIES "${xxhash_INCLUDE_DIR}")
endif()
