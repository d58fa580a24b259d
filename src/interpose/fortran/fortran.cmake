# The Fortran entry points (src/interpose/fortran, docs/fortran.md), generated
# from served.list. Open MPI's Fortran bindings call PMPI_* and would bypass
# dtmpi: its builds define the mpif.h / `use mpi` names of every served
# function (which Open MPI's mpi_f08 procedures call too). MPICH's mpif.h
# binding calls the C MPI_* that dtmpi already serves (defining its names
# would serve each call twice); its mpi_f08 procedures call PMPI_* for the
# functions served.list marks mpich_f08, and only those are defined (and the
# mpif.h procedures of those marked mpich_mpif, which call MPICH's internals).
if(DTMPI_MPI_FLAVOUR STREQUAL "openmpi")
  set(DTMPI_FORTRAN_BINDINGS ON)
  target_sources(dtmpi_interpose PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/bindings_core.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_p2p.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_requests.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_coll.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_reduce.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_rma.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_callbacks.cpp ${CMAKE_CURRENT_LIST_DIR}/peers.cpp)
else()
  # DTMPI_FORTRAN_BINDINGS names Open MPI's full set (tests link libmpichfort without it)
  set(DTMPI_FORTRAN_BINDINGS OFF)
  target_sources(dtmpi_interpose PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bindings_mpich_f08.cpp
    ${CMAKE_CURRENT_LIST_DIR}/bindings_mpich_mpif.cpp ${CMAKE_CURRENT_LIST_DIR}/bindings_callbacks.cpp)
endif()
set(DTMPI_FORTRAN_BINDINGS ${DTMPI_FORTRAN_BINDINGS} PARENT_SCOPE)
