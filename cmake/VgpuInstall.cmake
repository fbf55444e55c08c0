# SPDX-License-Identifier: Apache-2.0
# Install rules and the exported CMake package, so find_package(vgpu) works from a prefix.
include(CMakePackageConfigHelpers)

install(TARGETS vgpu EXPORT vgpuTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The platform layer's headers (vgpu/platform) are vgpu's own, not API: not installed.
install(DIRECTORY core/base/include/vgpu core/runtime/include/vgpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN platform EXCLUDE)
install(EXPORT vgpuTargets NAMESPACE vgpu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)
# The MPI layer, when built: an optional component (find_package(vgpu COMPONENTS vgpu_mpi)).
if(VGPU_MPI_ENABLED)
  install(TARGETS vgpu_mpi EXPORT vgpuMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY mpi/include/vgpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT vgpuMpiTargets NAMESPACE vgpu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)
endif()

configure_package_config_file(cmake/vgpuConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vgpuConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
# Findxxhash.cmake, Findcpuinfo.cmake: vgpuConfig.cmake finds xxHash and cpuinfo with them for a
# static libvgpu.
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfigVersion.cmake
              cmake/Findxxhash.cmake cmake/Findcpuinfo.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)

# The licence, where distributions put a package's documentation.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/vgpu)

# vgpu.pc for pkg-config users (`pkg-config --cflags --libs vgpu`). Its prefix is written
# relative to ${pcfiledir} (where the .pc file lies) unless a directory was given absolute, so
# the installed tree can be moved. A shared libvgpu keeps its dependencies private; a static
# one needs the libraries it was linked with (`pkg-config --static --libs vgpu`).
set(vgpu_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(VGPU_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH vgpu_pc_up "/prefix/${vgpu_pc_dir}" "/prefix")
  string(REGEX REPLACE "/$" "" vgpu_pc_up "${vgpu_pc_up}")
  set(VGPU_PC_PREFIX "\${pcfiledir}/${vgpu_pc_up}")
endif()
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(VGPU_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(VGPU_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
set(VGPU_PC_LIBS_PRIVATE "")
if(NOT VGPU_LIBRARY_SHARED)
  # What the layers link (TBB, xxhash, cpuinfo, dlopen, threads); the SPIR-V toolchain is a run-time
  # module (libvgpu_shader_toolchain.so), never linked.
  set(vgpu_pc_private "")
  list(APPEND vgpu_pc_private -ltbb ${XXHASH_LDFLAGS} ${CPUINFO_LDFLAGS} ${CMAKE_DL_LIBS} -lpthread)
  list(TRANSFORM vgpu_pc_private REPLACE "^(dl)$" "-l\\1")
  list(JOIN vgpu_pc_private " " VGPU_PC_LIBS_PRIVATE)
endif()
configure_file(cmake/vgpu.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vgpu.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vgpu.pc DESTINATION ${vgpu_pc_dir})
