# SPDX-License-Identifier: Apache-2.0
# Findcpuinfo: cpuinfo::cpuinfo, the cpuinfo library (Debian: libcpuinfo-dev). Installed with
# vgpu and used by vgpuConfig.cmake for a static libvgpu, whose platform layer calls cpuinfo_*.
# Not Debian 12's own cpuinfo-config.cmake, whose clog target names a path that does not exist
# (/usr/lib/lib/x86_64-linux-gnu/libclog.a) and fails every find_package(cpuinfo) CONFIG.
# Sets cpuinfo_FOUND, cpuinfo_INCLUDE_DIR and cpuinfo_LIBRARY (cache variables: point them at
# another cpuinfo).
find_path(cpuinfo_INCLUDE_DIR NAMES cpuinfo.h)
find_library(cpuinfo_LIBRARY NAMES cpuinfo)
mark_as_advanced(cpuinfo_INCLUDE_DIR cpuinfo_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(cpuinfo REQUIRED_VARS cpuinfo_LIBRARY cpuinfo_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "a static libvgpu links cpuinfo. Fix: install libcpuinfo-dev or set cpuinfo_LIBRARY and cpuinfo_INCLUDE_DIR.")
if(cpuinfo_FOUND AND NOT TARGET cpuinfo::cpuinfo)
  add_library(cpuinfo::cpuinfo UNKNOWN IMPORTED)
  set_target_properties(cpuinfo::cpuinfo PROPERTIES IMPORTED_LOCATION "${cpuinfo_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${cpuinfo_INCLUDE_DIR}")
endif()
