# The Fortran entry points (src/interpose/fortran, docs/fortran.md): Open MPI
# builds only. Open MPI's Fortran bindings call PMPI_* and would bypass dtmpi;
# MPICH's call the C MPI_* that dtmpi already serves, so an MPICH build
# defines no Fortran symbol (defining them would serve each call twice).
if(DTMPI_MPI_FLAVOUR STREQUAL "openmpi")
  set(DTMPI_FORTRAN_BINDINGS ON)
  target_sources(dtmpi_interpose PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/bindings_core.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_p2p.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_requests.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_coll.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_reduce.cpp ${CMAKE_CURRENT_LIST_DIR}/peers.cpp)
else()
  set(DTMPI_FORTRAN_BINDINGS OFF)
endif()
set(DTMPI_FORTRAN_BINDINGS ${DTMPI_FORTRAN_BINDINGS} PARENT_SCOPE)
