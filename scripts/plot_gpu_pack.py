#!/usr/bin/python3
"""Plots `dtmpi-bench pack --gpu --csv F` output: bandwidth (bytes read + written)
vs contiguous block size, one line per packed object size, for dtmpi's MPI_Pack,
with the best CUDA-aware-MPI baseline (per-block copies or cudaMemcpy2D) dashed.

Needs a python3 (>= 3.7) with matplotlib: Debian's /usr/bin/python3 (this
script's interpreter) after scripts/install-deps.sh, which installs
python3-matplotlib; another python3 (pyenv, venv) needs its own matplotlib
(pip install matplotlib) and to be named: that-python3 script.py ..."""
import argparse
import csv
import sys
from collections import defaultdict



from plotting import Parser, import_pyplot  # noqa: E402 (scripts/plotting.py)


parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("src", metavar="RESULTS_CSV", help="the CSV of dtmpi-bench pack --gpu --csv F")
parser.add_argument("out", metavar="OUT_PNG", help="the plot to write (PNG)")
parser.add_argument("title", nargs="?", default="dtmpi MPI_Pack on GPU memory", help="the plot's title")
args = parser.parse_args()
plt = import_pyplot()
src, out = args.src, args.out
title = args.title
ours = defaultdict(dict)
base = defaultdict(dict)
copy = {}
for r in csv.DictReader(open(src)):
    if r["kind"] != "vector" or r["count"] != "1":
        continue
    n, b = int(r["packed_bytes"]), int(r["block"])
    bw = lambda s: 2 * n / float(s) / 1e9 if float(s) > 0 else None  # noqa: E731
    ours[n][b] = bw(r["ours_s"])
    cands = [float(x) for x in (r["per_block_s"], r["copy2d_s"]) if float(x) > 0]
    base[n][b] = 2 * n / min(cands) / 1e9 if cands else None
    copy[n] = bw(r["copy_s"])

fig, ax = plt.subplots(figsize=(9, 5.5))
colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
for i, n in enumerate(sorted(ours)):
    c = colors[i % len(colors)]
    bs = sorted(ours[n])
    label = f"{n // 1048576} MiB" if n >= 1048576 else (f"{n // 1024} KiB" if n >= 1024 else f"{n} B")
    ax.plot(bs, [ours[n][b] for b in bs], "o-", color=c, label=f"dtmpi, {label}")
    ax.plot(bs, [base[n][b] for b in bs], "x--", color=c, alpha=0.6)
    if copy.get(n):
        ax.axhline(copy[n], color=c, lw=0.6, ls=":")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("contiguous block (bytes), 512 B pitch")
ax.set_ylabel("GB/s (packed bytes read + written, call to return)")
ax.set_title(title + "\nsolid: dtmpi; dashed: best of per-block cudaMemcpyAsync / cudaMemcpy2DAsync; dotted: one cudaMemcpyAsync of the packed bytes")
ax.title.set_fontsize(9)
ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
