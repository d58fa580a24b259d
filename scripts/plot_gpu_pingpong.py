#!/usr/bin/python3
"""Plots `dtmpi-bench pingpong --gpu --csv F` output: one-way time per object
(log scale) for each dtmpi method and auto, the manual and per-block baselines
and the limit (min of host pinned ping-pong and cudaMemcpyPeer).

Needs a python3 (>= 3.7) with matplotlib: Debian's /usr/bin/python3 (this
script's interpreter) after scripts/install-deps.sh, which installs
python3-matplotlib; another python3 (pyenv, venv) needs its own matplotlib
(pip install matplotlib) and to be named: that-python3 script.py ..."""
import argparse
import csv
import sys


from plotting import Parser, import_pyplot  # noqa: E402 (scripts/plotting.py)


parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("src", metavar="RESULTS_CSV", help="the CSV of dtmpi-bench pingpong --gpu --csv F")
parser.add_argument("out", metavar="OUT_PNG", help="the plot to write (PNG)")
parser.add_argument("title", nargs="?", default="dtmpi GPU ping-pong", help="the plot's title")
args = parser.parse_args()
plt = import_pyplot()
src, out = args.src, args.out
title = args.title
rows = list(csv.DictReader(open(src)))
names = [r["object"] for r in rows]
x = range(len(rows))
series = [("oneshot", "oneshot", "C1", "v"), ("staged", "staged", "C2", "^"), ("pipelined", "pipelined", "C4", "<"),
          ("device", "device (IPC)", "C0", "o"), ("manual", "manual: cudaMemcpy span + MPI_Pack", "C7", "s"),
          ("per_block", "manual: cudaMemcpy per block", "C3", "x")]
fig, ax = plt.subplots(figsize=(12, 6))
for key, label, color, marker in series:
    ax.plot(x, [float(r[key]) * 1e6 for r in rows], marker=marker, linestyle="none", color=color, label=label)
ax.plot(x, [float(r["auto"]) * 1e6 for r in rows], color="C0", linewidth=2, label="dtmpi auto")
ax.plot(x, [min(float(r["limit_host"]), float(r["limit_peer"])) * 1e6 for r in rows], color="k", linestyle="--",
        label="limit: packed bytes, best path")
ax.set_yscale("log")
ax.set_xticks(list(x))
ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
ax.set_ylabel("one-way time (us)")
ax.set_title(title)
ax.grid(True, which="both", axis="y", alpha=0.3)
ax.legend(fontsize=8, ncol=2)
fig.tight_layout()
fig.savefig(out, dpi=120)
