# SPDX-License-Identifier: Apache-2.0
# VGPU_WITH_MPI (AUTO, ON, OFF): the optional MPI layer, libvgpu_mpi (mpi/, vgpu::vgpu_mpi).
# AUTO builds it where find_package(MPI) finds the C bindings (Debian: libopenmpi-dev); ON
# requires them; OFF never looks (the default inside another project). libvgpu itself never
# links MPI.
if(VGPU_IS_TOP_LEVEL)
  set(VGPU_WITH_MPI "AUTO" CACHE STRING "Build the MPI layer libvgpu_mpi (ON, OFF, AUTO)")
else()
  set(VGPU_WITH_MPI "OFF" CACHE STRING "Build the MPI layer libvgpu_mpi (ON, OFF, AUTO)")
endif()
set_property(CACHE VGPU_WITH_MPI PROPERTY STRINGS AUTO ON OFF)
set(VGPU_MPI_ENABLED OFF)
if(NOT VGPU_WITH_MPI MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "VGPU_WITH_MPI: '${VGPU_WITH_MPI}' is not AUTO, ON or OFF. Fix: pass -DVGPU_WITH_MPI=AUTO, ON or OFF.")
endif()
if(NOT VGPU_WITH_MPI STREQUAL "OFF")
  # The C bindings only: the layer calls the C API (the C++ bindings left MPI 3).
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(VGPU_MPI_ENABLED ON)
    message(STATUS "vgpu MPI layer: MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE})")
  elseif(VGPU_WITH_MPI STREQUAL "ON")
    message(FATAL_ERROR "VGPU_WITH_MPI=ON but no MPI implementation was found. Fix: install one "
                        "(Debian: apt-get install libopenmpi-dev openmpi-bin), or pass -DVGPU_WITH_MPI=AUTO or OFF.")
  else()
    message(STATUS "vgpu MPI layer: not built (no MPI found; Debian: libopenmpi-dev)")
  endif()
endif()
