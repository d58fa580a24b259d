#!/usr/bin/env python3
"""Writes the Fortran entry points of dtmpi (bindings_<file>.cpp) from served.list.

Each function becomes one C++ function with Open MPI's internal name
(ompi_send_f: what Open MPI's mpi_f08 procedures call) and the mpif.h / `use
mpi` names Open MPI exports as aliases of it (mpi_send_, mpi_send__, mpi_send,
MPI_SEND); the body converts the Fortran arguments (handles, sentinels,
LOGICALs, 1-based indices, statuses) and calls dtmpi's own C entry point.

    src/interpose/fortran/generate.py          # rewrites the bindings
    src/interpose/fortran/generate.py --check  # exit 1 if they are out of date
"""
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
    "info": ("MPI_Info", "MPI_Info_f2c", None, None),
}
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
        sig = []
        for a in args:
            name, kind = a.split(":")
            m = re.fullmatch(r"(\w+)(?:\((\w+)\))?", kind)
            sig.append((name, m.group(1), m.group(2)))
        for n in names.split("/"):
            current.append((n, sig))
        if names.endswith("*"):  # the star marks the last name only
            current[-1] = (current[-1][0].rstrip("*"), sig, True)
    return files


def count_expr(sig, name):
    """The C value of the INTEGER argument `name` (in, or out after the call)."""
    kind = {a: k for a, k, _ in sig}[name]
    return f"{name}_c" if kind == "int_out" else f"f::in({name})"


def entry(cname, sig, pmpi=False):
    params, pre, args, post, post_ok = [], [], [], [], []
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
        params.append(("void* " if kind == "buf" else "MPI_Aint* " if kind == "aints" else "MPI_Fint* ") + name)
        stem = kind.rsplit("_", 1)[0] if kind.endswith(("_out", "_inout")) else kind
        if kind == "buf":
            args.append(f"f::buffer({name})")
        elif kind == "int":
            args.append(f"f::in({name})")
        elif kind in ("int_out", "int_inout"):
            pre.append(f"int {c} = {'f::in(' + name + ')' if kind == 'int_inout' else '0'};")
            args.append(f"&{c}")
            post.append(f"*{name} = {c};")
        elif kind in ("ints", "weights", "logical"):
            args.append(f"f::{kind}({name})")
        elif kind == "aints":
            args.append(name)
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
            pre.append(f"f::Status {c}({name});")
            args.append(f"{c}.c()")
            post.append(f"{c}.write_back();")
        elif kind == "statuses":
            pre.append(f"f::Statuses {c}({name}, {count_expr(sig, capacity)});")
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
    lower = cname.lower()
    fsig = ", ".join([n.upper() for n, k, _ in sig if k != "noargv"] + ["IERROR"])
    out = [f"// MPI_{cname.upper()}({fsig})",
           f"DTMPI_FORTRAN_ENTRY({lower}, {cname.upper()}, ({', '.join(params)})) {{"]
    out += [f"  {s}" for s in pre]
    out.append(f"  const int rc = MPI_{cname}({', '.join(args)});")
    out += [f"  {s}" for s in post]
    if post_ok:
        out.append("  if (rc == MPI_SUCCESS) {")
        out += [f"    {s}" for s in post_ok]
        out.append("  }")
    out += ["  f::set_ierror(ierror, rc);", "}"]
    if pmpi:
        out.append(f"DTMPI_FORTRAN_PMPI_ALIAS({lower}, ({', '.join(params)}))")
    return "\n".join(out)


def render(file, functions):
    head = [f"// GENERATED by src/interpose/fortran/generate.py from served.list [{file}]: do not edit.",
            "// The Fortran entry points of these MPI functions (Open MPI builds only; see",
            "// binding.hpp for the symbol names and docs/fortran.md for the design).",
            '#include "interpose/fortran/binding.hpp"', "",
            "namespace f = dtmpi::interpose::fortran;", ""]
    return "\n".join(head + ["\n\n".join(entry(*f) for f in functions)]) + "\n"


def main():
    files = parse(os.path.join(HERE, "served.list"))
    stale = []
    for file, functions in files.items():
        path = os.path.join(HERE, f"bindings_{file}.cpp")
        text = render(file, functions)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(path)
            if "--check" not in sys.argv:
                open(path, "w").write(text)
    if "--list" in sys.argv:
        print("\n".join(f[0] for fs in files.values() for f in fs))
    if "--pmpi" in sys.argv:
        print("\n".join(f[0] for fs in files.values() for f in fs if len(f) > 2))
    if "--check" in sys.argv and stale:
        print("out of date (run src/interpose/fortran/generate.py):", *stale, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
