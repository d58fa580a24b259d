#!/usr/bin/env python3
"""Claims C10, C12 and C18 of the Nishtala digest (../shared/research/seed-001,
section 6) checked on a `dtmpi-bench coll` log (gpu-check.sh coll writes one:
bench/results/coll-bench-*.txt).

  C10  Allgather: radix-2 dissemination (Bruck; dtmpi's recdbl) <= flat at
       every size, 4-16 ranks.
  C12  Scatter (and Gather): flat best or near-best on one node at almost all
       sizes; a tree only at the tiniest.
  C18  The best algorithm differs per communicator; reusing another's choice
       costs 1.3-4.34x (thesis). Here the communicators are the world at
       2, 4, 8, 16 ranks: the largest communicator's best reused on the others.
  C5   (with --table, dtmpi-tune's table: bench/results/coll-table-*.json)
       Many non-blocking rooted collectives in flight take less time per call
       than the same number of blocking ones: Bcast and Reduce on 4 and 8
       ranks, the table's 16 in flight against its back-to-back blocking
       cells, for the system MPI's algorithm and dtmpi's chosen one.

usage: scripts/coll_claims.py BENCH_LOG [--table TABLE_JSON]
"""
import json
import re
import sys


def claim_c5(table_path):
    entries = json.load(open(table_path))["entries"]
    cells = {}
    for e in entries:
        if e["op"] in ("bcast", "reduce") and e["ranks"] in (4, 8):
            cells.setdefault((e["op"], e["ranks"], e["bytes"]), {})[e["in_flight"]] = e
    print("C5 us per call: 16 non-blocking in flight vs back-to-back blocking (system MPI | dtmpi's choice)")
    held = {"system": 0, "dtmpi": 0}
    total = 0
    for (op, n, b), v in sorted(cells.items()):
        if True not in v or False not in v:
            continue
        total += 1
        blk, fly = v[False], v[True]
        sys_ok, dt_ok = fly["system_us"] < blk["system_us"], fly["us"] < blk["us"]
        held["system"] += sys_ok
        held["dtmpi"] += dt_ok
        print(f"  {op:6s} {b:8d} B on {n} ranks: system {fly['system_us']:8.2f} vs {blk['system_us']:8.2f} "
              f"{'holds' if sys_ok else 'no':5s} | {fly['algorithm']:>13s} {fly['us']:8.2f} vs "
              f"{blk['algorithm']:>13s} {blk['us']:8.2f} {'holds' if dt_ok else 'no'}")
    print(f"  C5 holds for the system MPI in {held['system']} of {total} cells, for dtmpi's choice in "
          f"{held['dtmpi']} of {total}")


def parse(path):
    """{ranks: {op: {bytes: {variant: us}}}}; 'system' and 'tuned' included."""
    data, ranks, op, names = {}, None, None, []
    for line in open(path):
        m = re.match(r"collectives on (\d+) ranks", line)
        if m:
            ranks = int(m.group(1))
            data[ranks] = {}
            continue
        head = line.split()
        if head and ranks and len(head) > 3 and head[1] == "bytes":
            op = head[0]
            names = [w for w in head[2:] if w not in ("ratio", "tuned", "picks", "again")]
            data[ranks][op] = {}
            continue
        if op and head and head[0].isdigit() and ranks:
            nums = [float(x) for x in head[1:] if re.match(r"^[0-9.]+$", x)]
            # system, then (variant, ratio) pairs, then tuned, ratio and
            # (since session 23) "again", the system's call timed a second
            # time: neither is one of dtmpi's algorithms, so not in the row
            row = {"system": nums[0]}
            for i, name in enumerate(names[1:]):
                row[name] = nums[1 + 2 * i]
            data[ranks][op][int(head[0])] = row
    return data


def main():
    args = sys.argv[1:]
    table = None
    if len(args) == 3 and args[1] == "--table":
        table = args[2]
        args = args[:1]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args and args[0] in ("-h", "--help") else 2
    if table:
        claim_c5(table)
    d = parse(args[0])
    print("C10 allgather: recdbl (Bruck) vs flat, us")
    holds = total = 0
    for n in sorted(d):
        if n < 4 or "allgather" not in d[n]:
            continue
        for b, row in sorted(d[n]["allgather"].items()):
            total += 1
            ok = row["recdbl"] <= row["flat"] * 1.05
            holds += ok
            print(f"  {n:2d} ranks {b:6d} B: recdbl {row['recdbl']:8.2f}  flat {row['flat']:8.2f}  {'holds' if ok else 'does not hold'}")
    print(f"  C10 holds (within 5%) in {holds} of {total} cells")
    print("C12 scatter / gather: flat vs binomial on 8-16 ranks")
    for op in ("scatter", "gather"):
        near = total = 0
        for n in sorted(d):
            if n < 8 or op not in d[n]:
                continue
            for b, row in sorted(d[n][op].items()):
                total += 1
                ok = row["flat"] <= row["binomial"] * 1.1
                near += ok
                print(f"  {op:7s} {n:2d} ranks {b:6d} B: flat {row['flat']:8.2f}  binomial {row['binomial']:8.2f}  {'flat best or within 10%' if ok else 'tree better'}")
        print(f"  C12 ({op}): flat best or near-best in {near} of {total} cells")
    print("C18 the largest communicator's best algorithm reused on smaller ones")
    big = max(d)
    worst, differ, cells = 1.0, 0, 0
    for n in sorted(d):
        if n == big:
            continue
        for op, rows in d[n].items():
            for b, row in rows.items():
                ref = d[big].get(op, {}).get(b)
                if not ref:
                    continue
                algs = [k for k in row if k not in ("system",)]
                best_here = min(algs, key=lambda k: row[k])
                best_big = min(algs, key=lambda k: ref[k])
                cells += 1
                if best_here != best_big:
                    differ += 1
                    penalty = row[best_big] / row[best_here]
                    worst = max(worst, penalty)
                    if penalty >= 1.3:
                        print(f"  {op:9s} {b:6d} B on {n:2d} ranks: best {best_here} {row[best_here]:.2f} us, "
                              f"{big} ranks' best {best_big} {row[best_big]:.2f} us ({penalty:.2f}x)")
    print(f"  C18: dtmpi's best algorithm differs from the {big}-rank one in {differ} of {cells} cells; "
          f"reusing it costs up to {worst:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
