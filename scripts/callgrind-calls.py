#!/usr/bin/env python3
"""Instructions dtmpi adds per call, from a callgrind profile of
`dtmpi-bench latency` (issue 29; bench/results/hot-path-instructions-*):

  mpiexec -n 2 valgrind --tool=callgrind --callgrind-out-file=cg.%q{OMPI_COMM_WORLD_RANK}.out \\
      build-openmpi/bench/dtmpi-bench latency
  scripts/callgrind-calls.py cg.0.out

For dtmpi's MPI_Send and MPI_Recv (defined in the bench binary, which links the
interposer's objects): calls, the instructions executed in the function
itself and in dtmpi's functions it calls (together: what dtmpi adds around
the system MPI), and the system MPI's own per-call cost under it and from the
bench's direct PMPI_ rows (the baseline). Instruction counts do not depend
on the machine's load, unlike times on a shared VM."""
import collections
import re
import sys

if len(sys.argv) < 2 or sys.argv[1] in ('-h', '--help'):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 else 2)
path = sys.argv[1]
obj = sys.argv[2] if len(sys.argv) > 2 else 'dtmpi-bench'
names = ('MPI_Send', 'MPI_Recv')
tables = {'fn': {}, 'ob': {}}


def name(kind, s):  # callgrind's name compression: "(id) name" once, "(id)" after
    m = re.match(r'\((\d+)\)(?:\s+(.*))?$', s)
    if not m:
        return s
    if m.group(2) is not None:
        tables[kind][m.group(1)] = m.group(2)
    return tables[kind][m.group(1)]


self_ir = collections.Counter()
calls_in = collections.Counter()
edges = collections.defaultdict(lambda: [0, 0])  # (caller, callee) -> [calls, inclusive Ir]
cur = cur_ob = cob = cfn = pending = None
for line in open(path):
    line = line.rstrip('\n')
    if line.startswith('ob='):
        cur_ob = name('ob', line[3:])
    elif line.startswith('fn='):
        cur, cob = (cur_ob, name('fn', line[3:])), None
    elif line.startswith('cob='):
        cob = name('ob', line[4:])
    elif line.startswith('cfn='):
        cfn = (cob or cur_ob, name('fn', line[4:]))
    elif line.startswith('calls='):
        pending = int(line[6:].split()[0])
    elif line and (line[0].isdigit() or line[0] in '+-*'):
        parts = line.split()
        cost = int(parts[1]) if len(parts) > 1 else 0
        if pending is not None:  # the cost line of a call: the callee's inclusive cost
            e = edges[(cur, cfn)]
            e[0] += pending
            e[1] += cost
            calls_in[cfn] += pending
            pending, cob = None, None  # cob= names the next call's object only
        else:
            self_ir[cur] += cost

for key in sorted(k for k in self_ir if k[1] in names and obj in (k[0] or '')):
    n = calls_in[key]
    # dtmpi's callees on every call; a callee reached by a few calls only (the
    # first call of a thread learning sizes and ranges, whose blocking receive
    # then waits inside it) is counted apart: it is not per-call cost
    own = sum(inc for (a, b), (c, inc) in edges.items() if a == key and obj in (b[0] or '') and c * 2 >= n)
    rare = sum(c for (a, b), (c, inc) in edges.items() if a == key and obj in (b[0] or '') and c * 2 < n)
    mpi = sum(inc for (a, b), (c, inc) in edges.items() if a == key and obj not in (b[0] or ''))
    print(f"{key[1]:9s} calls {n:7d}  in itself {self_ir[key] / n:6.2f}  in dtmpi's callees {own / n:6.2f}  "
          f"added {(self_ir[key] + own) / n:6.2f}  system MPI under it {mpi / n:8.1f}  Ir per call"
          f"  ({rare} calls to dtmpi's slow path)")
for target in ('PMPI_Send', 'PMPI_Recv'):
    for (a, b), (c, inc) in sorted(edges.items(), key=lambda kv: -kv[1][0]):
        if b[1] == target and c >= 1000 and a[1] not in names:
            print(f"{target} called directly (the system MPI rows): calls {c}, {inc / c:.1f} Ir per call")
