#!/usr/bin/env python3
"""Writes the Fortran entry points of dtmpi from served.list.

Open MPI (bindings_<file>.cpp): each function becomes one C++ function with
Open MPI's internal name (ompi_send_f: what Open MPI's mpi_f08 procedures
call) and the mpif.h / `use mpi` names Open MPI exports as aliases of it
(mpi_send_, mpi_send__, mpi_send, MPI_SEND).

MPICH (bindings_mpich_f08.cpp): the functions marked mpich_f08 become MPICH's
`use mpi_f08` procedure (mpi_wait_f08_), whose own definition calls PMPI_Wait
and would bypass dtmpi; those marked mpich_mpif (bindings_mpich_mpif.cpp)
become its mpif.h procedure too (mpi_win_get_attr_ and aliases: MPICH's calls
MPII_Win_get_attr). MPICH's other Fortran procedures call the C MPI_*.

Either way the body converts the Fortran arguments (handles, sentinels,
LOGICALs, 1-based indices, statuses) and calls dtmpi's own C entry point.

    src/interpose/fortran/generate.py          # rewrites the bindings
    src/interpose/fortran/generate.py --check  # exit 1 if they are out of date
    src/interpose/fortran/generate.py --list | --pmpi | --cptr | --mpich-f08 | --mpich-mpif | --hand  # names
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HANDLE = {  # kind stem -> (C type, f2c, c2f, null)
    "type": ("MPI_Datatype", "MPI_Type_f2c", "MPI_Type_c2f", "MPI_DATATYPE_NULL"),
    "comm": ("MPI_Comm", "MPI_Comm_f2c", "MPI_Comm_c2f", "MPI_COMM_NULL"),
    "request": ("MPI_Request", "MPI_Request_f2c", "MPI_Request_c2f", "MPI_REQUEST_NULL"),
    "message": ("MPI_Message", "MPI_Message_f2c", "MPI_Message_c2f", "MPI_MESSAGE_NULL"),
    "op": ("MPI_Op", "MPI_Op_f2c", None, None),
    "info": ("MPI_Info", "MPI_Info_f2c", "MPI_Info_c2f", "MPI_INFO_NULL"),
    # Open MPI: dtmpi's MPI_Win_f2c/c2f, which know dtmpi's windows (rma_window.cpp)
    "win": ("MPI_Win", "MPI_Win_f2c", "MPI_Win_c2f", "MPI_WIN_NULL"),
    "group": ("MPI_Group", "MPI_Group_f2c", "MPI_Group_c2f", "MPI_GROUP_NULL"),
    "errhandler": ("MPI_Errhandler", "MPI_Errhandler_f2c", "MPI_Errhandler_c2f", "MPI_ERRHANDLER_NULL"),
}
# The Fortran binding a function is generated for: the entry macro, and the
# conversions whose sentinels or layout differ (binding.hpp, binding_mpich_f08.hpp).
FAMILIES = {
    "openmpi": {"entry": "DTMPI_FORTRAN_ENTRY", "status_t": "MPI_Fint* ", "status": "Status",
                "statuses": "Statuses", "weights": "weights"},
    "mpich_f08": {"entry": "DTMPI_FORTRAN_F08_ENTRY", "status_t": "MPI_F08_status* ", "status": "F08Status",
                  "statuses": "F08Statuses", "weights": "f08_weights"},
    # MPICH's mpif.h procedures that bypass the C MPI_* (mpich_mpif): no
    # buffers, statuses or weights among them
    "mpich_mpif": {"entry": "DTMPI_FORTRAN_MPICH_ENTRY"},
}
Function = collections.namedtuple("Function", "name sig pmpi mpich_f08 mpich_mpif cptr hand")
# hand: the entry points are written by hand (bindings_callbacks.cpp: the
# arguments are procedures, which no generated conversion can call); listed
# like the others, never generated
FLAGS = {"mpich_f08", "mpich_mpif", "cptr", "hand"}
PEERS = {"send": "kSend", "recv": "kRecv", "nsend": "kNeighborSend", "nrecv": "kNeighborRecv"}


def parse(path):
    files, current = {}, None
    for raw in open(path):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            current = files.setdefault(m.group(1), [])
            continue
        names, *args = line.split()
        sig, flags = [], set()
        for a in args:
            if ":" not in a:
                flags.add(a)
                continue
            name, kind = a.split(":")
            m = re.fullmatch(r"(\w+)(?:\((\w+)\))?", kind)
            sig.append((name, m.group(1), m.group(2)))
        if flags - FLAGS:
            sys.exit(f"{names}: unknown flag {sorted(flags - FLAGS)}")
        for n in names.split("/"):
            current.append(Function(n.rstrip("*"), sig, n.endswith("*"), "mpich_f08" in flags, "mpich_mpif" in flags,
                                    "cptr" in flags, "hand" in flags))
    return files


def count_expr(sig, name):
    """The C value of the INTEGER argument `name` (in, or out after the call)."""
    kind = {a: k for a, k, _ in sig}[name]
    return f"{name}_c" if kind in ("int_out", "win_keyval") else f"f::in({name})"


def entry(fn, family):
    cname, sig = fn.name, fn.sig
    fam = FAMILIES[family]
    params, pre, args, post, post_ok, hidden = [], [], [], [], [], []
    # communicators first: datatype arrays are sized by them
    for name, kind, _ in sig:
        if kind == "comm":
            pre.append(f"const MPI_Comm {name}_c = MPI_Comm_f2c(*{name});")
    comm = next((n for n, k, _ in sig if k == "comm"), None)
    capacity = next((p for _, k, p in sig if k == "requests"), None)
    for name, kind, par in sig:
        c = f"{name}_c"
        if kind == "noargv":
            args += ["nullptr", "nullptr"]
            continue
        if family != "openmpi" and kind in ("buf", "types"):
            # MPICH's mpi_f08 procedures of buffer-taking functions call the C
            # MPI_* (dtmpi's); their sentinels (MPIR_F08_MPI_BOTTOM) differ
            sys.exit(f"{cname}: kind {kind} has no {family} conversion")
        if family == "mpich_mpif" and kind in ("status", "statuses", "weights"):
            sys.exit(f"{cname}: kind {kind} has no {family} conversion")
        ptype = {"buf": "void* ", "aints": "MPI_Aint* ", "aint": "MPI_Aint* ", "aint_out": "MPI_Aint* ",
                 "attr": "MPI_Aint* ", "attr_out": "MPI_Aint* ", "ptr": "void* ", "string": "const char* ",
                 "string_out": "char* ", "status": fam.get("status_t"), "statuses": fam.get("status_t")}
        params.append(ptype.get(kind, "MPI_Fint* ") + name)
        stem = kind.rsplit("_", 1)[0] if kind.endswith(("_out", "_inout")) else kind
        if kind == "buf":
            args.append(f"f::buffer({name})")
        elif kind == "int":
            args.append(f"f::in({name})")
        elif kind in ("int_out", "int_inout"):
            pre.append(f"int {c} = {'f::in(' + name + ')' if kind == 'int_inout' else '0'};")
            args.append(f"&{c}")
            post.append(f"*{name} = {c};")
        elif kind in ("ints", "logical"):
            args.append(f"f::{kind}({name})")
        elif kind == "weights":
            args.append(f"f::{fam['weights']}({name})")
        elif kind == "aints":
            args.append(name)
        elif kind == "aint":
            args.append(f"*{name}")
        elif kind == "win_keyval":
            pre.append(f"const int {c} = f::win_keyval({name});")
            args.append(c)
        elif kind == "aint_out":
            pre.append(f"MPI_Aint {c} = 0;")
            args.append(f"&{c}")
            post_ok.append(f"*{name} = {c};")
        elif kind == "ptr":  # a C pointer written through (MPI_Win_allocate's baseptr)
            args.append(name)
        elif kind == "attr":  # INTEGER(KIND=MPI_ADDRESS_KIND): the attribute is the value
            args.append(f"f::attr_in({name})")
        elif kind == "attr_out":
            flag = next(n for n, k, _ in sig if k == "flag_out")
            pre.append(f"void* {c} = nullptr;")
            args.append(f"&{c}")
            post_ok.append(f"if ({flag}_c) *{name} = f::attr_out({count_expr(sig, par)}, {c});")
        elif kind == "string":  # CHARACTER(LEN=*): blank-padded, length passed after the arguments
            hidden.append(f"std::size_t {name}_len")
            pre.append(f"const std::string {c} = f::string_in({name}, {name}_len);")
            args.append(f"{c}.c_str()")
        elif kind == "string_out":
            hidden.append(f"std::size_t {name}_len")
            pre.append(f"char {c}[MPI_MAX_OBJECT_NAME] = {{}};")
            args.append(c)
            post_ok.append(f"f::string_out({c}, {name}, {name}_len);")
        elif kind == "logicals":
            pre.append(f"const f::Logicals {c}({name}, {count_expr(sig, par)});")
            args.append(f"{c}.data()")
        elif kind == "flag_out":
            pre.append(f"int {c} = 0;")
            args.append(f"&{c}")
            post.append(f"*{name} = f::logical_out({c});")
        elif kind == "index_out":
            pre.append(f"int {c} = MPI_UNDEFINED;")
            args.append(f"&{c}")
            post.append(f"*{name} = f::one_based({c});")
        elif kind == "indices_out":
            args.append(f"f::ints_out({name})")
            post.append(f"f::to_one_based({name}, {count_expr(sig, par)});")
        elif kind == "types":
            pre.append(f"const f::Datatypes {c}({name}, f::peer_count({comm}_c, f::Peers::{PEERS[par]}));")
            args.append(f"{c}.data()")
        elif kind == "requests":
            pre.append(f"f::Requests {c}({name}, {count_expr(sig, par)});")
            args.append(f"{c}.data()")
            post.append(f"{c}.write_back();")
        elif kind == "status":
            pre.append(f"f::{fam['status']} {c}({name});")
            args.append(f"{c}.c()")
            post.append(f"{c}.write_back();")
        elif kind == "statuses":
            pre.append(f"f::{fam['statuses']} {c}({name}, {count_expr(sig, capacity)});")
            args.append(f"{c}.c()")
            post.append(f"{c}.write_back({count_expr(sig, par)});")
        elif stem in HANDLE:
            ctype, f2c, c2f, null = HANDLE[stem]
            if kind == stem:
                args.append(f"{c}" if stem == "comm" else f"{f2c}(*{name})")
            elif kind.endswith("_inout"):
                pre.append(f"{ctype} {c} = {f2c}(*{name});")
                args.append(f"&{c}")
                post.append(f"*{name} = {c2f}({c});")
            else:
                pre.append(f"{ctype} {c} = {null};")
                args.append(f"&{c}")
                post_ok.append(f"*{name} = {c2f}({c});")
        else:
            sys.exit(f"{cname}: unknown kind {kind}")
    params.append("MPI_Fint* ierror")
    params += hidden  # gfortran passes CHARACTER lengths after every argument
    lower = cname.lower()
    if family != "mpich_f08":
        fsig = ", ".join([n.upper() for n, k, _ in sig if k != "noargv"] + ["IERROR"])
        out = [f"// MPI_{cname.upper()}({fsig})",
               f"{fam['entry']}({lower}, {cname.upper()}, ({', '.join(params)})) {{"]
    else:  # ierror is OPTIONAL in mpi_f08: absent, it arrives as a null pointer
        fsig = ", ".join([n for n, k, _ in sig if k != "noargv"] + ["ierror"])
        out = [f"// MPI_{cname}({fsig})  (use mpi_f08)",
               f"{fam['entry']}({lower}, ({', '.join(params)})) {{"]
    out += [f"  {s}" for s in pre]
    out.append(f"  const int rc = MPI_{cname}({', '.join(args)});")
    out += [f"  {s}" for s in post]
    if post_ok:
        out.append("  if (rc == MPI_SUCCESS) {")
        out += [f"    {s}" for s in post_ok]
        out.append("  }")
    out += ["  f::set_ierror(ierror, rc);", "}"]
    if fn.pmpi and family == "openmpi":
        out.append(f"DTMPI_FORTRAN_PMPI_ALIAS({lower}, ({', '.join(params)}))")
    if fn.cptr and family == "openmpi":
        out.append(f"DTMPI_FORTRAN_CPTR_ALIAS({lower}, {cname.upper()}, ({', '.join(params)}))")
    return "\n".join(out)


def render(file, functions, family="openmpi"):
    if family == "openmpi":
        head = [f"// GENERATED by src/interpose/fortran/generate.py from served.list [{file}]: do not edit.",
                "// The Fortran entry points of these MPI functions (Open MPI builds only; see",
                "// binding.hpp for the symbol names and docs/fortran.md for the design).",
                '#include "interpose/fortran/binding.hpp"']
    elif family == "mpich_mpif":
        head = ["// GENERATED by src/interpose/fortran/generate.py from served.list (the functions",
                "// marked mpich_mpif): do not edit. MPICH's mpif.h / `use mpi` procedures of these",
                "// functions call MPICH's internals (MPII_*), not MPI_*; dtmpi defines them",
                "// (MPICH builds only; see binding_mpich_f08.hpp and docs/fortran.md).",
                '#include "interpose/fortran/binding_mpich_f08.hpp"']
    else:
        head = ["// GENERATED by src/interpose/fortran/generate.py from served.list (the functions",
                "// marked mpich_f08): do not edit. MPICH's `use mpi_f08` procedures of these",
                "// functions call PMPI_*; dtmpi defines them (MPICH builds only; see",
                "// binding_mpich_f08.hpp and docs/fortran.md).",
                '#include "interpose/fortran/binding_mpich_f08.hpp"']
    head += ["", "namespace f = dtmpi::interpose::fortran;", ""]
    return "\n".join(head + ["\n\n".join(entry(f, family) for f in functions)]) + "\n"


def main():
    files = parse(os.path.join(HERE, "served.list"))
    f08 = [f for fs in files.values() for f in fs if f.mpich_f08]
    mpif = [f for fs in files.values() for f in fs if f.mpich_mpif]

    def generated(functions):
        return [f for f in functions if not f.hand]

    outputs = [(f"bindings_{file}.cpp", render(file, generated(functions))) for file, functions in files.items()]
    outputs.append(("bindings_mpich_f08.cpp", render("mpich_f08", generated(f08), "mpich_f08")))
    outputs.append(("bindings_mpich_mpif.cpp", render("mpich_mpif", generated(mpif), "mpich_mpif")))
    stale = []
    for name, text in outputs:
        path = os.path.join(HERE, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(path)
            if "--check" not in sys.argv:
                open(path, "w").write(text)
    if "--list" in sys.argv:
        print("\n".join(f.name for fs in files.values() for f in fs))
    if "--pmpi" in sys.argv:
        print("\n".join(f.name for fs in files.values() for f in fs if f.pmpi))
    if "--mpich-f08" in sys.argv:
        print("\n".join(f.name for f in f08))
    if "--cptr" in sys.argv:
        print("\n".join(f.name for fs in files.values() for f in fs if f.cptr))
    if "--mpich-mpif" in sys.argv:
        print("\n".join(f.name for f in mpif))
    if "--hand" in sys.argv:
        print("\n".join(f.name for fs in files.values() for f in fs if f.hand))
    if "--check" in sys.argv and stale:
        print("out of date (run src/interpose/fortran/generate.py):", *stale, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
