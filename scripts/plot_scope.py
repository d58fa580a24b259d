#!/usr/bin/python3
"""Figures of dtmpi-scope's results (its Google Benchmark JSON), like the
thesis's chapter 3: bandwidth against transfer size for each group of rows,
with the hardware's nominal figures as dotted lines and the plain
cudaMemcpy + wall-clock rows (naive/...) dashed beside the rows they
measure; how much the plain measurement is off; the CPU cost of calls.
Writes OUT_PREFIX-bandwidth.png, OUT_PREFIX-method.png, OUT_PREFIX-cpu.png
(the latter two where such rows were measured).

Needs a python3 (>= 3.7) with matplotlib: Debian's /usr/bin/python3 (this
script's interpreter) after scripts/install-deps.sh, which installs
python3-matplotlib; another python3 (pyenv, venv) needs its own matplotlib
(pip install matplotlib) and to be named: that-python3 script.py ..."""
import argparse
import json
import re
import sys


from plotting import Parser, import_pyplot  # noqa: E402 (scripts/plotting.py)


parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("src", metavar="SCOPE_JSON", help="dtmpi-scope's results (DIR/scope.json)")
parser.add_argument("out", metavar="OUT_PREFIX", help="where the figures go: OUT_PREFIX-bandwidth.png, ...")
parser.add_argument("--rows", metavar="REGEX", default=None, help="only the rows whose name matches REGEX")
args = parser.parse_args()
try:
    doc = json.load(open(args.src))
except (OSError, ValueError) as e:
    sys.exit(f"{parser.prog}: cannot read {args.src}: {e}")
if "benchmarks" not in doc or "context" not in doc:
    sys.exit(f"{parser.prog}: {args.src} is not Google Benchmark JSON")
ctx = doc["context"]
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def split(name):
    """ROW/bytes:N/manual_time -> (ROW, key, N, threads)"""
    row, key, arg, threads = [], None, None, 1
    for part in name.split("/"):
        m = re.fullmatch(r"(\w+):(\d+)", part)
        if part in ("manual_time", "real_time"):
            continue
        if m and m.group(1) == "threads":
            threads = int(m.group(2))
        elif m:
            key, arg = m.group(1), int(m.group(2))
        else:
            row.append(part)
    return "/".join(row), key, arg, threads


# per (row, key, arg, threads): median seconds, median/min/max bandwidth (GB/s), call rate
points = {}
for b in doc["benchmarks"]:
    if b.get("error_occurred"):
        continue
    name = b.get("run_name", b["name"])
    row, key, arg, threads = split(name)
    if args.rows and not re.search(args.rows, row):
        continue
    agg = b.get("aggregate_name") if b.get("run_type") == "aggregate" else "one"
    if agg not in ("median", "min", "max", "one"):
        continue
    p = points.setdefault((row, key, arg, threads), {})
    if "time_unit" in b:
        p.setdefault("s_" + agg, b["real_time"] * UNIT[b["time_unit"]])
    if "bytes_per_second" in b:
        p["bw_" + agg] = b["bytes_per_second"] / 1e9
    if "items_per_second" in b:
        p["rate_" + agg] = b["items_per_second"]


def get(p, what):
    return p.get(what + "_median", p.get(what + "_one"))


def nominal(key):
    try:
        return float(ctx.get("dtmpi_nominal_" + key + "_gbps", 0))
    except ValueError:
        return 0.0


transfers = {}
for (row, key, arg, threads), p in points.items():
    if key == "bytes" and get(p, "bw"):
        transfers.setdefault(row, []).append((arg, get(p, "bw"), p.get("bw_min"), p.get("bw_max")))
for v in transfers.values():
    v.sort()

GROUPS = [
    ("host <-> device, explicit copies", r"^(naive/)?(pageable|pinned)/"),
    ("zero-copy and copy kernels", r"^(zerocopy|kernel|kernel-pull|kernel-push)/"),
    ("managed memory: demand migration, prefetch", r"^managed-"),
    ("GPU <-> GPU and within one GPU", r"^(naive/)?(device|peer|nopeer)/"),
    ("strided copies: cudaMemcpy2DAsync, 3DAsync, 3DPeerAsync", r"^memcpy(2d|3d|3dpeer)/"),
    ("the host", r"^host/"),
]
plt = import_pyplot()
groups = [(t, [r for r in transfers if re.search(rx, r)]) for t, rx in GROUPS]
groups = [(t, rows) for t, rows in groups if rows]
title = f"dtmpi-scope on {ctx.get('dtmpi_gpus', '?')} ({ctx.get('dtmpi_host', ctx.get('host_name', '?'))})"
if not groups:
    sys.exit(f"{parser.prog}: no transfer rows measured in {args.src}")
cols = 2 if len(groups) > 1 else 1
nrows = (len(groups) + cols - 1) // cols
fig, axes = plt.subplots(nrows, cols, figsize=(7.5 * cols, 4.6 * nrows), squeeze=False)
lines = [("PCIe", nominal("pcie"), "C7"), ("HBM/2", nominal("hbm") / 2, "C8"), ("NVLink", nominal("nvlink"), "C9")]
for ax, (gtitle, rows) in zip(axes.flat, groups):
    method_rows = [r for r in rows if not r.startswith("naive/")]
    colors = {r: f"C{i % 10}" for i, r in enumerate(method_rows)}
    for r in rows:
        pts = transfers[r]
        base = r[len("naive/"):] if r.startswith("naive/") else r
        naive = r.startswith("naive/")
        ax.plot([a for a, *_ in pts], [b for _, b, *_ in pts], color=colors.get(base, "k"),
                linestyle="--" if naive else "-", marker="" if naive else ".", linewidth=1.2,
                label=("naive: " + base if naive else r))
        lo = [x[2] for x in pts]
        hi = [x[3] for x in pts]
        if not naive and all(v is not None for v in lo + hi):
            ax.fill_between([a for a, *_ in pts], lo, hi, color=colors.get(base, "k"), alpha=0.15, linewidth=0)
    for label, v, c in lines:
        if v > 0 and not (gtitle.startswith("the host")):
            ax.axhline(v, color=c, linestyle=":", linewidth=1)
            ax.text(1, v, f" {label} {v:.0f} GB/s", color=c, fontsize=7, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s (median; band: min-max of repetitions)")
    ax.set_title(gtitle, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="upper left")
for ax in list(axes.flat)[len(groups):]:
    ax.axis("off")
fig.suptitle(title, fontsize=11)
fig.tight_layout()
out = args.out + "-bandwidth.png"
fig.savefig(out, dpi=110)
written = [out]

# what the plain measurement gets wrong: naive time / method time
pairs = [(r[len("naive/"):], r) for r in transfers if r.startswith("naive/") and r[len("naive/"):] in transfers]
if pairs:
    fig, ax = plt.subplots(figsize=(9, 5))
    for i, (m, n) in enumerate(pairs):
        mb = dict((a, b) for a, b, *_ in transfers[m])
        nb = dict((a, b) for a, b, *_ in transfers[n])
        xs = sorted(set(mb) & set(nb))
        ax.plot(xs, [mb[x] / nb[x] for x in xs], marker=".", color=f"C{i % 10}", label=m)
    ax.axhline(1, color="k", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("method bandwidth / plain cudaMemcpy + wall clock")
    ax.set_title("what the method corrects: call and synchronization latency, start and end skew", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = args.out + "-method.png"
    fig.savefig(out, dpi=110)
    written.append(out)

# CPU cost of calls
calls = sorted(((row + (f" {key}:{arg}" if key else ""), get(p, "s") * 1e6)
                for (row, key, arg, threads), p in points.items()
                if (row.startswith("cpu/") or row.startswith("dtmpi/")) and threads == 1 and get(p, "s")
                and "threaded" not in row and "graph" not in row), key=lambda x: x[0])
threaded = {}
for (row, key, arg, threads), p in points.items():
    if "threaded" in row and get(p, "rate"):
        threaded.setdefault(row, []).append((threads, get(p, "rate") / 1e6))
graphs = {}
for (row, key, arg, threads), p in points.items():
    if row.startswith("cpu/graph-") and get(p, "s"):
        graphs.setdefault(row, []).append((arg, get(p, "s") * 1e6))
if calls or threaded or graphs:
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    ax = axes[0]
    ax.barh(range(len(calls)), [t for _, t in calls], color="C0")
    ax.set_yticks(range(len(calls)))
    ax.set_yticklabels([n for n, _ in calls], fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("us per call (median)")
    ax.set_title("one call", fontsize=10)
    ax = axes[1]
    for i, (row, pts) in enumerate(sorted(threaded.items())):
        pts.sort()
        ax.plot([t for t, _ in pts], [r for _, r in pts], marker="o", color=f"C{i}", label=row)
    ax.set_xlabel("threads")
    ax.set_ylabel("M calls / s, all threads")
    ax.set_title("several threads on one GPU (Fig. 3.12)", fontsize=10)
    if threaded:
        ax.legend(fontsize=7)
    ax = axes[2]
    for i, (row, pts) in enumerate(sorted(graphs.items())):
        pts.sort()
        ax.plot([a for a, _ in pts], [t for _, t in pts], marker=".", color=f"C{i % 10}", label=row)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("captured operations")
    ax.set_ylabel("us (median)")
    ax.set_title("CUDA graphs vs the same calls one by one (Fig. 3.13)", fontsize=10)
    if graphs:
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out = args.out + "-cpu.png"
    fig.savefig(out, dpi=110)
    written.append(out)
print("wrote " + ", ".join(written))
