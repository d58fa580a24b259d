#!/usr/bin/env python3
"""Plots `dtmpi-bench pingpong --gpu --csv F` output: one-way time per object
(log scale) for each dtmpi method and auto, the manual and per-block baselines
and the limit (min of host pinned ping-pong and cudaMemcpyPeer).
Usage: plot_gpu_pingpong.py results.csv out.png [title]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
title = sys.argv[3] if len(sys.argv) > 3 else "dtmpi GPU ping-pong"
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
