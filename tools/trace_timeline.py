#!/usr/bin/env python3
"""Merges the DTMPI_TRACE files of one node into one timeline and prints, for
each step (a trace point following another, on any rank), how often it
occurred and its median / 10th / 90th percentile duration in microseconds.

  tools/trace_timeline.py PREFIX [--last N] [--raw] [--by-total] [--slow US]

--last N keeps only the last N points of the merged timeline (the steady
state of a benchmark); --raw prints the merged points themselves; --by-total
lists the steps by the time they add up to (count x duration), largest first;
--slow US lists, rank by rank, every gap of more than US microseconds between
two consecutive points of that rank (where a rare stall hides)."""
import glob
import statistics
import sys


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    prefix = args[0]
    last = int(args[args.index("--last") + 1]) if "--last" in args else 0
    points = []
    for path in glob.glob(prefix + ".*.txt"):
        with open(path) as f:
            for line in f:
                ns, rank, label = line.rstrip("\n").split(" ", 2)
                points.append((int(ns), int(rank), label))
    points.sort()
    if last:
        points = points[-last:]
    if "--slow" in args:
        limit = float(args[args.index("--slow") + 1])
        t0 = points[0][0] if points else 0
        by_rank = {}
        for ns, rank, label in points:
            by_rank.setdefault(rank, []).append((ns, label))
        for rank in sorted(by_rank):
            pts = by_rank[rank]
            for (a_ns, a_label), (b_ns, b_label) in zip(pts, pts[1:]):
                gap = (b_ns - a_ns) / 1e3
                if gap > limit:
                    print(f"rank {rank} at {(a_ns - t0) / 1e3:12.2f} us: {gap:9.2f} us  {a_label} -> {b_label}")
        return 0
    if "--raw" in args:
        t0 = points[0][0] if points else 0
        for ns, rank, label in points:
            print(f"{(ns - t0) / 1e3:12.2f} us  rank {rank}  {label}")
        return 0
    steps = {}
    order = []
    for (a_ns, a_rank, a_label), (b_ns, b_rank, b_label) in zip(points, points[1:]):
        key = (f"{a_rank}:{a_label}", f"{b_rank}:{b_label}")
        if key not in steps:
            steps[key] = []
            order.append(key)
        steps[key].append((b_ns - a_ns) / 1e3)
    if "--by-total" in args:
        order.sort(key=lambda k: -sum(steps[k]))
    print(f"{'count':>6} {'median':>8} {'p10':>8} {'p90':>8} {'total':>9}  step (rank:label -> rank:label)")
    for key in order:
        v = sorted(steps[key])
        p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
        print(f"{len(v):6d} {statistics.median(v):8.2f} {p(0.1):8.2f} {p(0.9):8.2f} {sum(v):9.1f}  {key[0]} -> {key[1]}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader (head) has seen enough
        sys.stderr.close()
        sys.exit(0)
