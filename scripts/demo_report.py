#!/usr/bin/env python3
"""The report of scripts/run-demo.sh: reads the outputs of dtmpi-demo it
collected (DIR/plain.R and DIR/with.R for each round R; DIR/gpu-with.1 and
DIR/gpu-plain.1 for the GPU section) and prints, per case, the median time per
exchange on the system MPI and with dtmpi, the spread (25th-75th percentile of
all samples), the speedup and its range over the rounds. Exits 1 when a halo
cell arrived wrong or the two runs received different bytes.

Needs any python3 (>= 3.7; the standard library only)."""
import argparse
import datetime
import glob
import os
import statistics
import sys

WHAT = {
    "sendrecv": "6 faces, MPI_Sendrecv of subarray types",
    "pack": "6 faces, MPI_Pack + MPI_Sendrecv + MPI_Unpack",
    "zfaces": "2 faces of 24-byte blocks, MPI_Sendrecv",
}


class Parser(argparse.ArgumentParser):
    """argparse, with errors that say how to get the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\nRun '{self.prog} --help' for the usage.\n")


def read(path):
    """samples, verify and checksum records of one demo run, and its comments."""
    run = {"samples": {}, "verify": {}, "checksum": {}, "comments": []}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "#":
                run["comments"].append(line[2:].rstrip("\n"))
            elif parts[0] == "sample":
                run["samples"].setdefault(parts[1], []).append(float(parts[2]))
            elif parts[0] in ("verify", "checksum"):
                run[parts[0]][parts[1]] = parts[2]
    return run


def quartiles(v):
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]  # noqa: E731
    return statistics.median(v), q(0.25), q(0.75)


def main():
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DIR", help="where run-demo.sh left the demo's outputs")
    parser.add_argument("--gpu-plain-exit", type=int, help="exit status of the GPU demo on the plain system MPI")
    parser.add_argument("--gpu-note", help="why the GPU section was skipped")
    args = parser.parse_args()

    rounds = sorted({int(p.rsplit(".", 1)[1]) for p in glob.glob(os.path.join(args.dir, "plain.*"))})
    if not rounds:
        parser.error(f"no demo outputs in {args.dir}")
    runs = {v: [read(os.path.join(args.dir, f"{v}.{r}")) for r in rounds] for v in ("plain", "with")}
    head = runs["plain"][0]["comments"]
    mpi = " ".join(next((c[4:] for c in head if c.startswith("mpi ")), "the system MPI").split())
    grid = next((c for c in head if c.startswith("grid ")), "")
    cases = [c for c in WHAT if c in runs["plain"][0]["samples"]]
    ok = True

    print(f"dtmpi demo, {datetime.date.today()}: {mpi}; {grid}")
    print(f"{len(rounds)} rounds, each the plain run and the dtmpi run (LD_PRELOAD) of the same binary, "
          "alternating which goes first")
    print("times: microseconds per exchange, median of all samples [25th-75th percentile]; "
          "speedup: system / dtmpi (range over the rounds)")
    print()
    print(f"{'case':<10} {'what':<48} {'system MPI':>22} {'with dtmpi':>22}  speedup")
    for c in cases:
        cols = []
        for v in ("plain", "with"):
            pooled = [s for run in runs[v] for s in run["samples"][c]]
            med, lo, hi = quartiles(pooled)
            cols.append((med, f"{med:8.0f} [{lo:5.0f}-{hi:5.0f}]"))
        per_round = [statistics.median(p["samples"][c]) / statistics.median(w["samples"][c])
                     for p, w in zip(runs["plain"], runs["with"])]
        speedup = cols[0][0] / cols[1][0]
        print(f"{c:<10} {WHAT[c]:<48} {cols[0][1]:>22} {cols[1][1]:>22}  {speedup:5.2f}x "
              f"({min(per_round):.2f}-{max(per_round):.2f})")
    print()

    verified = [(v, i, c, run["verify"].get(c)) for v in runs for i, run in enumerate(runs[v]) for c in cases]
    wrong = [x for x in verified if x[3] != "ok"]
    sums = {(v, c): {run["checksum"].get(c) for run in runs[v]} for v in runs for c in cases}
    differ = [c for c in cases if len(sums[("plain", c)] | sums[("with", c)]) != 1]
    if wrong:
        ok = False
        for v, i, c, res in wrong:
            print(f"WRONG: case {c}, {'dtmpi' if v == 'with' else 'system MPI'} run of round {i + 1}: halo {res}")
    if differ:
        ok = False
        print(f"MISMATCH: the received bytes differ between the runs in case(s) {', '.join(differ)}")
    if ok:
        print(f"correct: every halo cell of every case checked after each run ({len(verified)} checks), "
              "and the received bytes (checksums) are the same with and without dtmpi")

    print()
    print("GPU memory (the block in cudaMalloc'd memory, device pointers handed to MPI):")
    gpu_with = os.path.join(args.dir, "gpu-with.1")
    if args.gpu_note or not os.path.exists(gpu_with):
        print(f"  {args.gpu_note or 'skipped: no GPU build of the demo given (run-demo.sh --gpu)'}")
        return 0 if ok else 1
    g = read(gpu_with)
    med = lambda run, c: quartiles(run["samples"][c])  # noqa: E731
    fmt = lambda q: f"{q[0]:6.0f} us [{q[1]:.0f}-{q[2]:.0f}]"  # noqa: E731
    for c in g["comments"]:
        if c.startswith("grid "):
            print(f"  {c}")
    pe = args.gpu_plain_exit
    if pe == 0:
        p = read(os.path.join(args.dir, "gpu-plain.1"))
        print(f"  system MPI, device pointers: works (a CUDA-aware MPI): sendrecv {fmt(med(p, 'sendrecv'))}")
    else:
        print(f"  system MPI, device pointers: fails (exit {pe}): not CUDA-aware, it reads device memory as host memory")
    staged_path = os.path.join(args.dir, "gpu-staged.1")
    staged = read(staged_path) if os.path.exists(staged_path) else None
    if staged and "hoststaged" in staged["samples"]:
        print(f"  system MPI, the block copied to the host and back around the exchange (what a program does "
              f"instead): {fmt(med(staged, 'hoststaged'))}")
    for c in ("sendrecv", "pack", "zfaces"):
        if c in g["samples"]:
            line = f"  with dtmpi, device pointers, {c:<8} {fmt(med(g, c))}"
            if staged and "hoststaged" in staged["samples"] and c == "sendrecv":
                line += f"  {med(staged, 'hoststaged')[0] / med(g, c)[0]:.2f}x the copy through the host"
            print(line)
    bad = [c for c in g["samples"] if g["verify"].get(c) != "ok"]
    if staged:
        bad += [c for c in staged["samples"] if staged["verify"].get(c) != "ok"]
    print("  " + (f"WRONG halo cells in {', '.join(bad)}" if bad else "every halo cell checked: right"))
    return 0 if ok and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
