# Install rules and the exported CMake package, so find_package(vgpu) works from a prefix.
include(CMakePackageConfigHelpers)

install(TARGETS vgpu EXPORT vgpuTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/include/vgpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT vgpuTargets NAMESPACE vgpu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)

configure_package_config_file(cmake/vgpuConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vgpuConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/vgpuConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vgpu)
