#!/usr/bin/env python3
"""Which of the given MPI functions MPICH's `use mpi_f08` procedures reach
through PMPI_ or MPICH's internals (and so past dtmpi), read from
libmpichfort's machine code.

    mpich-f08-pmpi.py LIBMPICHFORT NAME...          # prints the NAMEs, one a line
    mpich-f08-pmpi.py --mpif LIBMPICHFORT NAME...   # the same for the mpif.h procedures

NAME is the C name without MPI_ (Wait). mpi_wait_f08_ is the procedure a
program's `call MPI_Wait` reaches; a direct call from its body to PMPI_Wait
(through the PLT) means dtmpi's MPI_Wait never sees the call, and dtmpi has
to define mpi_wait_f08_ itself (served.list's mpich_f08). A procedure that
calls MPI_Wait instead, or reaches it through MPICH's C helpers
(MPIR_Send_cdesc -> MPI_Send), is served through dtmpi's C entry point and must
not be defined a second time. Exits 2 when objdump is missing or the library
has no mpi_f08 procedures.
"""
import re
import shutil
import subprocess
import sys


def main():
    args = sys.argv[1:]
    mpif = args[:1] == ["--mpif"]
    lib, names = (args[1], args[2:]) if mpif else (args[0], args[1:])
    if not shutil.which("objdump"):
        print("no objdump", file=sys.stderr)
        return 2
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True, text=True, check=True)
    calls, current = {}, None
    for line in dis.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>@]+)(?:@@?\S+)?>:$", line)
        if m:
            current = calls.setdefault(m.group(1), set())
            continue
        m = re.search(r"\b(?:call|jmp)\s+[0-9a-f]+ <([^>@+]+)@plt>", line)
        if m and current is not None:
            current.add(m.group(1))
    if not any(f.endswith("_f08_") for f in calls):
        print(f"{lib}: no mpi_f08 procedures", file=sys.stderr)
        return 2
    for name in names:
        procs = [f"pmpi_{name.lower()}_", f"mpi_{name.lower()}_"] if mpif else [f"mpi_{name.lower()}_f08_"]
        callees = set().union(*(calls.get(p, set()) for p in procs))
        if {f"PMPI_{name}", f"MPII_{name}"} & callees:
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
