#!/usr/bin/env bash
# The Fortran entry points cover what dtmpi serves (issue 26):
#   check-served-list.sh SOURCE_DIR LIBDTMPI FLAVOUR
# - bindings_*.cpp are generate.py's output of served.list (no hand edits);
# - served.list names exactly the MPI_* functions libdtmpi defines in C;
# - Open MPI: each has its five Fortran symbols (ompi_x_f, mpi_x_, mpi_x__,
#   mpi_x, MPI_X), and pmpi_x_ (mpi_x_cptr_ and its aliases) where served.list
#   marks it * (cptr);
# - MPICH: libdtmpi defines mpi_x_f08_ for the functions marked mpich_f08 and
#   no other Fortran symbol (MPICH's mpif.h binding and its other f08
#   procedures call the C functions dtmpi serves; a second definition would
#   serve each call twice), and mpi_x_ (with mpi_x__, mpi_x, MPI_X) for those
#   marked mpich_mpif; and, given LIBMPICHFORT, the marks are exactly the
#   functions whose f08 (mpif.h) procedure calls PMPI_x or MPII_x
#   (mpich-f08-pmpi.py).
#   check-served-list.sh SOURCE_DIR LIBDTMPI FLAVOUR [LIBMPICHFORT]
set -uo pipefail
src=$1 lib=$2 flavour=$3 fortlib=${4:-}
gen=$src/src/interpose/fortran/generate.py
failed=0
python3 "$gen" --check || failed=1
defined=$(nm -D --defined-only "$lib" | awk '{print $3}')
# C only: MPI_Type_set_attr is interposed for dtmpi's buffer attribute, whose
# keyval (dtmpi_buffer_keyval()) is a C API; Fortran programs' attributes
# pass through Open MPI's own binding
# (MPI_Comm_set_attr likewise, for dtmpi_reduction_keyval())
# MPI_Alloc_mem/MPI_Free_mem add and drop dtmpi's host ranges
# (src/interpose/alloc_mem.cpp); Fortran's binding calls PMPI_Alloc_mem (its
# memory is not added, the driver is asked) and PMPI_Free_mem, which dtmpi
# defines
# The MPI-4 large-count forms (MPI_Put_c, ...; src/interpose/rma_large_count.cpp)
# have no mpif.h binding, and MPICH's mpi_f08 large procedures
# (mpi_put_f08ts_large_) call the C functions dtmpi defines
# The communicator constructors (src/interpose/comm_create.cpp) only make
# dtmpi's collective state early; a Fortran program's communicators get it at
# their first blocking collective instead
c_only='^MPI_(Type_set_attr|Comm_set_attr|Alloc_mem|Free_mem|Comm_dup|Comm_dup_with_info|Comm_split|Comm_split_type|Comm_create|Comm_create_group|[A-Z][a-z_]+_c)$'
c_served=$(grep -E '^MPI_[A-Z][a-z_]+$' <<<"$defined" | grep -vE "$c_only" | sort)
listed=$(python3 "$gen" --list | sed 's/^/MPI_/' | sort)
if [ "$c_served" != "$listed" ]; then
  echo "FAIL: served.list and the C entry points differ (< C only, > list only):"
  diff <(echo "$c_served") <(echo "$listed")
  failed=1
fi
fortran=$(grep -E '^(ompi_[a-z_]+_f|p?mpi_[a-z_]+_?_?|mpi_[a-z_]+_f08_|MPI_[A-Z_]+)$' <<<"$defined" | grep -vE '^MPI_[A-Z][a-z]' | sort)
if [ "$flavour" = openmpi ]; then
  # and pmpi_x_ for the functions marked * (Open MPI's mpi_f08 calls those)
  want=$( (sed 's/^MPI_//' <<<"$listed" | awk '{l=tolower($0); print "ompi_" l "_f"; print "mpi_" l "_";
                                             print "mpi_" l "__"; print "mpi_" l; print "MPI_" toupper($0)}'
           python3 "$gen" --pmpi | awk '{print "pmpi_" tolower($0) "_"}'
           python3 "$gen" --cptr | awk '{l=tolower($0); print "mpi_" l "_cptr_"; print "mpi_" l "_cptr__";
                                         print "mpi_" l "_cptr"; print "MPI_" toupper($0) "_CPTR"}') | sort)
else
  want=$( (python3 "$gen" --mpich-f08 | awk '{print "mpi_" tolower($0) "_f08_"}'
           python3 "$gen" --mpich-mpif | awk '{l=tolower($0); print "mpi_" l "_"; print "mpi_" l "__";
                                              print "mpi_" l; print "MPI_" toupper($0)}') | sort)
  if [ -n "$fortlib" ]; then
    # the hand-written entry points (served.list: hand) are defined for their
    # Fortran procedure arguments, whatever MPICH's procedures call
    hand=$(python3 "$gen" --hand | sort)
    unhand() { grep -vxF -f <(echo "$hand") || true; }
    checked=$(sed 's/^MPI_//' <<<"$listed" | unhand)
    pmpi=$("$src/tests/fortran/mpich-f08-pmpi.py" "$fortlib" $checked)
    case $? in
      0) marked=$(python3 "$gen" --mpich-f08 | unhand | sort)
         if [ "$(sort <<<"$pmpi")" != "$marked" ]; then
           echo "FAIL: served.list's mpich_f08 marks are not the functions whose f08 procedure in $fortlib calls PMPI_ (< PMPI_, > marked):"
           diff <(sort <<<"$pmpi") <(echo "$marked")
           failed=1
         else
           echo "ok: the $(wc -l <<<"$marked") functions marked mpich_f08 are those whose f08 procedure calls PMPI_ or MPII_ ($fortlib)"
         fi ;;
      *) echo "note: $fortlib not checked" ;;
    esac
    pmpi=$("$src/tests/fortran/mpich-f08-pmpi.py" --mpif "$fortlib" $checked)
    case $? in
      0) marked=$(python3 "$gen" --mpich-mpif | unhand | sort)
         if [ "$(sort <<<"$pmpi")" != "$marked" ]; then
           echo "FAIL: served.list's mpich_mpif marks are not the functions whose mpif.h procedure in $fortlib calls PMPI_ or MPII_ (< called, > marked):"
           diff <(sort <<<"$pmpi") <(echo "$marked")
           failed=1
         else
           echo "ok: the $(wc -l <<<"$marked") functions marked mpich_mpif are those whose mpif.h procedure calls PMPI_ or MPII_"
         fi ;;
    esac
  fi
fi
if [ "$fortran" != "$want" ]; then
  echo "FAIL: Fortran symbols of $lib ($flavour) are not the expected ones (< defined, > expected):"
  diff <(echo "$fortran") <(echo "$want") | head -40
  failed=1
fi
[ $failed -eq 0 ] && echo "ok: $(wc -w <<<"$listed") functions, $(wc -w <<<"$fortran") Fortran symbols ($flavour)"
exit $failed
