# dtmpi_mpi_flavour(<out-var>): which MPI the C compiler sees through
# MPI::MPI_C -- "openmpi" (Open MPI's mpi.h defines OPEN_MPI), "mpich" (MPICH
# and its ABI family: Intel MPI, MVAPICH, Cray MPICH define MPICH_VERSION) or
# "other". libdtmpi is compiled against one mpi.h and its handles (MPI_Comm is
# a pointer in Open MPI, an int in MPICH) mean nothing to another MPI, so the
# build names its library after the flavour and the installed package refuses
# a consumer of another one (dtmpiConfig.cmake).
#
# Used by dtmpi's own build and installed beside dtmpiConfig.cmake. The check
# compiles a test program, so it needs find_package(MPI COMPONENTS C) first;
# the result is cached per MPI (compiler and include directories), so a
# consumer that switches MPI in the same build directory is checked again.
include_guard(GLOBAL)
include(CheckCSourceCompiles)
include(CMakePushCheckState)

function(dtmpi_mpi_flavour out)
  if(NOT TARGET MPI::MPI_C)
    message(FATAL_ERROR "dtmpi_mpi_flavour: find_package(MPI COMPONENTS C) first")
  endif()
  string(MD5 key "${MPI_C_COMPILER};${MPI_C_INCLUDE_DIRS};${MPI_C_LIBRARIES};${CMAKE_C_COMPILER}")
  string(SUBSTRING "${key}" 0 12 key)
  cmake_push_check_state(RESET)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif
int main(void) { return 0; }" DTMPI_MPI_IS_OPENMPI_${key})
  check_c_source_compiles("#include <mpi.h>
#if !defined(MPICH_VERSION) && !defined(MPICH)
#error not MPICH
#endif
int main(void) { return 0; }" DTMPI_MPI_IS_MPICH_${key})
  cmake_pop_check_state()
  if(DTMPI_MPI_IS_OPENMPI_${key})
    set(${out} openmpi PARENT_SCOPE)
  elseif(DTMPI_MPI_IS_MPICH_${key})
    set(${out} mpich PARENT_SCOPE)
  else()
    set(${out} other PARENT_SCOPE)
  endif()
endfunction()

# A readable name for messages.
function(dtmpi_mpi_flavour_name flavour out)
  if(flavour STREQUAL "openmpi")
    set(${out} "Open MPI" PARENT_SCOPE)
  elseif(flavour STREQUAL "mpich")
    set(${out} "MPICH (or an MPI of its ABI family)" PARENT_SCOPE)
  else()
    set(${out} "an MPI that is neither Open MPI nor MPICH" PARENT_SCOPE)
  endif()
endfunction()
