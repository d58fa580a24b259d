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

usage: scripts/coll_claims.py BENCH_LOG
"""
import re
import sys


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
            names = [w for w in head[2:] if w not in ("ratio", "tuned", "picks")]
            data[ranks][op] = {}
            continue
        if op and head and head[0].isdigit() and ranks:
            nums = [float(x) for x in head[1:] if re.match(r"^[0-9.]+$", x)]
            # system, then (variant, ratio) pairs, then tuned, ratio
            row = {"system": nums[0]}
            for i, name in enumerate(names[1:]):
                row[name] = nums[1 + 2 * i]
            data[ranks][op][int(head[0])] = row
    return data


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    d = parse(sys.argv[1])
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
