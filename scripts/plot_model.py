#!/usr/bin/python3
"""Heatmaps of a dtmpi performance model (dtmpi-measure's JSON and the
.decisions.csv written beside it): GPU pack bandwidth into device memory and
into mapped host memory over object size x block size, and the method the
model chooses with and without a CUDA IPC peer.

Needs a python3 (>= 3.7) with matplotlib: Debian's /usr/bin/python3 (this
script's interpreter) after scripts/install-deps.sh, which installs
python3-matplotlib; another python3 (pyenv, venv) needs its own matplotlib
(pip install matplotlib) and to be named: that-python3 script.py ..."""
import argparse
import csv
import json
import math
import sys


from plotting import Parser, import_pyplot  # noqa: E402 (scripts/plotting.py)


parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("src", metavar="MODEL_JSON",
                    help="dtmpi-measure's model-HOST-GPU.json (the .decisions.csv beside it is read too)")
parser.add_argument("out", metavar="OUT_PNG", help="the plot to write (PNG)")
args = parser.parse_args()
plt = import_pyplot()
from matplotlib.colors import ListedColormap  # noqa: E402
src, out = args.src, args.out
m = json.load(open(src))
panels = [k for k in ("pack_device", "pack_mapped") if k in m]
fig, axes = plt.subplots(1, len(panels) + 2, figsize=(5 * (len(panels) + 2), 4.5))
axes = list(axes) if hasattr(axes, "__len__") else [axes]


def label(n):
    for unit, s in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= s:
            return f"{n // s}{unit}"
    return str(int(n))


for ax, key in zip(axes, panels):
    g = m[key]
    bw = [[(b / s / 1e9 if s > 0 else float("nan")) for s in row] for b, row in zip(g["bytes"], g["seconds"])]
    im = ax.imshow(bw, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(g["blocks"])), [label(b) for b in g["blocks"]])
    ax.set_yticks(range(len(g["bytes"])), [label(b) for b in g["bytes"]])
    ax.set_xlabel("block (B)")
    ax.set_ylabel("object (B)")
    ax.set_title(f"{key} GB/s (packed bytes / time)")
    fig.colorbar(im, ax=ax)

names = ["oneshot", "staged", "pipelined", "device"]
rows = list(csv.DictReader(open(src[: -len(".json")] + ".decisions.csv")))
for ax, ipc in zip(axes[len(panels):], ("0", "1")):
    sizes = sorted({int(r["bytes"]) for r in rows})
    blocks = sorted({int(r["block"]) for r in rows})
    grid = [[float("nan")] * len(blocks) for _ in sizes]
    for r in rows:
        if r["ipc"] == ipc:
            grid[sizes.index(int(r["bytes"]))][blocks.index(int(r["block"]))] = names.index(r["method"])
    ax.imshow(grid, origin="lower", aspect="auto", cmap=ListedColormap(["C1", "C2", "C4", "C0"]), vmin=-0.5,
              vmax=3.5)
    ax.set_xticks(range(0, len(blocks), 2), [label(b) for b in blocks[::2]])
    ax.set_yticks(range(0, len(sizes), 2), [label(b) for b in sizes[::2]])
    ax.set_xlabel("block (B)")
    ax.set_ylabel("message (B)")
    ax.set_title("chosen method, " + ("CUDA IPC peer" if ipc == "1" else "no IPC peer"))
    for i, n in enumerate(names):
        ax.plot([], [], "s", color=f"C{[1, 2, 4, 0][i]}", label=n)
    ax.legend(fontsize=7, loc="upper left")
fig.suptitle(f"dtmpi model: {m.get('gpu') or 'host only'} on {m['host']}")
fig.tight_layout()
fig.savefig(out, dpi=110)
