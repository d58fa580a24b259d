#!/usr/bin/env python3
"""Merges the DTMPI_TRACE files of one node into one timeline and prints, for
each step (a trace point following another, on any rank), how often it
occurred and its median / 10th / 90th percentile duration in microseconds.

  tools/trace_timeline.py PREFIX [--last N] [--raw] [--by-total] [--slow US]

--last N keeps only the last N points of the merged timeline (the steady
state of a benchmark); --raw prints the merged points themselves; --by-total
lists the steps by the time they add up to (count x duration), largest first;
--slow US lists, rank by rank, every gap of more than US microseconds between
two consecutive points of that rank (where a rare stall hides).

Needs any python3 (>= 3.7; the standard library only)."""
import argparse
import glob
import statistics
import sys


class Parser(argparse.ArgumentParser):
    """argparse, with errors that say how to get the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\nRun '{self.prog} --help' for the usage.\n")


def main():
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", metavar="PREFIX", help="the DTMPI_TRACE prefix: PREFIX.<rank>.txt are read")
    parser.add_argument("--last", type=int, default=0, metavar="N", help="only the last N points of the timeline")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--raw", action="store_true", help="print the merged points themselves")
    mode.add_argument("--by-total", action="store_true", help="steps by the time they add up to, largest first")
    mode.add_argument("--slow", type=float, metavar="US", help="every gap of more than US microseconds per rank")
    args = parser.parse_args()
    prefix = args.prefix
    last = args.last
    points = []
    for path in glob.glob(prefix + ".*.txt"):
        with open(path) as f:
            for line in f:
                ns, rank, label = line.rstrip("\n").split(" ", 2)
                points.append((int(ns), int(rank), label))
    points.sort()
    if last:
        points = points[-last:]
    if not points:
        print(f"{parser.prog}: no trace files {prefix}.<rank>.txt", file=sys.stderr)
        return 1
    if args.slow is not None:
        limit = args.slow
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
    if args.raw:
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
    if args.by_total:
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
