#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws PNG plots for docs/benchmarks.md from a directory of benchmark JSON files.

usage: plot_benchmarks.py RESULTS_DIR [--out docs/img] [--label "H200, 2026-12-04"]

RESULTS_DIR holds what the benchmarks' --json wrote (tools/gpu-run.sh remote packs them into
$OUT/results-json.tar.gz and $OUT/results-json-python.tar.gz; unpack those, or leave the .tar.gz
files in RESULTS_DIR: their JSON members are read in place). Each file is matched by its "bench"
field where it has one, else by its name, else by its shape:

  vgpu-bench-roundtrip --json   roundtrip.png (fixed cost per call per device, issue-16 goals),
                                roundtrip-large.png (N=1024/4096 round trips, GPUs only),
                                roundtrip-device.png (host time beside the device's own timer)
  vgpu-bench-arrays --json      arrays-chain.png (10 dependent matmuls: arrays, device-only,
                                host arrays), arrays-stack.png (a (64,128,128) stack)
  bench/arrays_cpu.py --json    arrays-cpu-time.png (vgpu Python/C++, numpy, torch per N),
                                arrays-cpu-ratio.png (numpy / vgpu and torch / vgpu per N, goals)
  bench/python_overhead.py      python-overhead-n16.png (part 1), python-sizes.png (part 2),
                                python-seed.png (part 3), python-large.png (part 4 beside torch)
  vgpu-bench-gpu --json         gpu-matmul.png (matmul GFLOP/s per device vs N, cuBLAS)
  bench/cpu_reference.py        cpu-reference.png (CPU matmul GFLOP/s beside numpy and torch)
  vgpu-bench-select --json      selection.png (the device chosen per op × size, its time against
                                the fastest device's)

It prints every plot it drew and every file or part it skipped, with the reason. A second file of
one kind gets its own plots, named after the file (roundtrip-<file>.png). Titles carry --label
(default: the CPU, thread count and date the JSON records) and say "--quick" when the run was one.
Needs matplotlib: Debian's python3-matplotlib, so run it with /usr/bin/python3 (tools/dev.sh
installs it; ctest tools.plots draws every kind from recorded JSON in tests/data/plots).
"""

import argparse
import io
import json
import math
import pathlib
import sys
import tarfile

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.pyplot as plt
except ImportError as e:
    sys.exit(f"plot_benchmarks.py: matplotlib is not importable by {sys.executable} ({e}). Fix: apt install "
             "python3-matplotlib and run this with Debian's interpreter, /usr/bin/python3 (or pip install matplotlib "
             "for this one).")

FIGSIZE = (8, 4.5)
DPI = 120


# ---------------------------------------------------------------------------------------------
# Small helpers


def us(s):
    """Seconds to microseconds (None stays None)."""
    return None if s is None else s * 1e6


def ms(s):
    return None if s is None else s * 1e3


def short_name(name, limit=24):
    name = str(name or "")
    return name if len(name) <= limit else name[:limit - 1] + "…"


def wants_log(values, spread=20.0):
    """True when the positive values span more than `spread`× (a log axis then reads better)."""
    v = [x for x in values if x is not None and x > 0]
    return len(v) > 1 and max(v) / min(v) > spread


def label_for(doc, explicit):
    """The machine label for titles: --label, else what the JSON records about the run."""
    m = dict(doc.get("machine")) if isinstance(doc.get("machine"), dict) else {}
    # cpu_reference.py keeps the C++ bench's own document (its header facts) under "cpp".
    inner = doc.get("cpp", {}).get("machine") if isinstance(doc.get("cpp"), dict) else None
    for k, v in (inner if isinstance(inner, dict) else {}).items():
        if not m.get(k):
            m[k] = v
    quick = bool(m.get("quick"))
    if explicit:
        label = explicit
    else:
        cpu = m.get("cpu_model") or m.get("cpu") or ""
        threads = m.get("hardware_threads") or m.get("cores")
        parts = [p for p in (cpu, f"{threads} threads" if threads else "", m.get("date") or "") if p]
        label = ", ".join(parts) or "machine not recorded (pass --label)"
    return label + (" (--quick)" if quick else "")


class Plotter:
    """Keeps the output directory, the names already used and what was drawn or skipped."""

    def __init__(self, out, explicit_label):
        self.out = out
        self.explicit_label = explicit_label
        self.used = set()
        self.drawn = []
        self.skipped = []

    def name(self, base, stem, first):
        """base.png for the first file of a kind, base-<stem>.png for another."""
        n = f"{base}.png" if first and f"{base}.png" not in self.used else f"{base}-{stem}.png"
        k = 2
        while n in self.used:
            n = f"{base}-{stem}-{k}.png"
            k += 1
        self.used.add(n)
        return n

    def save(self, fig, name, what):
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / name
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        self.drawn.append((path, what))
        print(f"drew    {path}: {what}")

    def skip(self, what, why):
        self.skipped.append((what, why))
        print(f"skipped {what}: {why}")


def new_fig(title, label):
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.set_title(f"{title}\n{label}", fontsize=10)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    return fig, ax


def grouped_bars(ax, groups, series, unit, log=None, errors=None):
    """Bars of series (name -> list of values, one per group; None draws nothing) per group.
    errors: name -> list of (low, high) absolute values or None. Returns {(series, group): x}."""
    k = max(1, len(series))
    width = 0.8 / k
    where = {}
    all_values = [v for vals in series.values() for v in vals]
    for i, (name, vals) in enumerate(series.items()):
        xs, hs, lo, hi = [], [], [], []
        for g, v in enumerate(vals):
            if v is None:
                continue
            x = g - 0.4 + width * (i + 0.5)
            where[(name, g)] = x
            xs.append(x)
            hs.append(v)
            err = (errors or {}).get(name)
            if err and err[g]:
                lo.append(max(0.0, v - err[g][0]))
                hi.append(max(0.0, err[g][1] - v))
            else:
                lo.append(0.0)
                hi.append(0.0)
        if xs:
            yerr = [lo, hi] if any(lo) or any(hi) else None
            ax.bar(xs, hs, width * 0.92, label=name, yerr=yerr, capsize=2 if yerr else 0,
                   error_kw={"elinewidth": 0.8, "alpha": 0.7})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel(unit)
    if log if log is not None else wants_log(all_values):
        ax.set_yscale("log")
    return where, width


def headroom(ax, frac=0.3):
    """Extends the y axis upwards so its top `frac` is free for the legend and labels."""
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        lo = max(lo, 1e-300)
        ax.set_ylim(lo, 10 ** (math.log10(hi) + (math.log10(hi) - math.log10(lo)) * frac / (1 - frac)))
    else:
        ax.set_ylim(lo, hi + (hi - lo) * frac / (1 - frac))


def stat_range(st, scale):
    """(min, max) of a Stats JSON, scaled, or None."""
    if not isinstance(st, dict) or "min_s" not in st:
        return None
    return (st["min_s"] * scale, st.get("max_s", st["min_s"]) * scale)


def median(st, scale):
    return st["median_s"] * scale if isinstance(st, dict) and "median_s" in st else None


# ---------------------------------------------------------------------------------------------
# 1. vgpu-bench-roundtrip


def plot_roundtrip(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    devices = doc.get("devices") or []
    for f in doc.get("failures") or []:
        p.skip(f"{stem}: device {f.get('device')}", f"the bench failed there: {f.get('error')}")
    if not devices:
        p.skip(f"{stem} (vgpu-bench-roundtrip)", "no device rows in the file")
        return
    groups = [f"{d['device']}\n({d.get('type', '?')})\n{short_name(d.get('name'), 20)}" for d in devices]
    cases = [("N=16 matmul round trip", "matmul16_round_trip", "goal_matmul16_s"),
             ("256-float multiply round trip", "mul256_round_trip", "goal_mul256_s"),
             ("1 KiB write + read", "write_read_1k", None),
             ("batched, per dispatch (100 axpy)", "batched_per_dispatch_s", "goal_batched_s")]
    series, errors, goals = {}, {}, {}
    for title, key, goal in cases:
        vals, errs, gs = [], [], []
        for d in devices:
            v = d.get(key)
            if isinstance(v, dict):
                vals.append(median(v, 1e6))
                errs.append(stat_range(v, 1e6))
            else:
                vals.append(us(v) if isinstance(v, (int, float)) else None)
                errs.append(None)
            gs.append(us(d.get(goal)) if goal and d.get(goal) else None)
        series[title], errors[title], goals[title] = vals, errs, gs
    fig, ax = new_fig("vgpu-bench-roundtrip: fixed cost per call, per device (median; whiskers: min–max)", label)
    where, width = grouped_bars(ax, groups, series, "time per call (µs)", log=True, errors=errors)
    goal_drawn = False
    for title in series:
        for g, goal in enumerate(goals[title]):
            if goal and (title, g) in where:
                x = where[(title, g)]
                ax.hlines(goal, x - width * 0.6, x + width * 0.6, colors="black", linestyles="-", linewidth=2.4,
                          label=None if goal_drawn else "issue-16 goal (the bar it sits on)")
                ax.plot([x], [goal], marker="v", color="black", markersize=5)
                goal_drawn = True
    headroom(ax, 0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=3)
    p.save(fig, p.name("roundtrip", stem, first),
           "N=16 matmul, 256-float multiply, 1 KiB write+read and batched per-dispatch cost per device, "
           "goals as black marks on their bars")

    plot_roundtrip_device(p, devices, label, stem, first)

    large = [(d, d["large"]) for d in devices if isinstance(d.get("large"), dict) and d["large"]]
    if not large:
        p.skip(f"{stem}: large round trips", "no GPU device in the file (software devices and the CPU are "
               "not timed at N=1024/4096)")
        return
    sizes = sorted({int(k[len("matmul"):-len("_round_trip")]) for _, l in large for k in l
                    if k.startswith("matmul") and k.endswith("_round_trip")})
    series = {f"N={n}": [median(l.get(f"matmul{n}_round_trip"), 1e3) for _, l in large] for n in sizes}
    errors = {f"N={n}": [stat_range(l.get(f"matmul{n}_round_trip"), 1e3) for _, l in large] for n in sizes}
    fig, ax = new_fig("vgpu-bench-roundtrip: large matmul round trips (host A, B → host C; median, min–max)",
                      label)
    grouped_bars(ax, [f"{d['device']}\n{short_name(d.get('name'), 20)}" for d, _ in large], series,
                 "time per call (ms)", errors=errors)
    headroom(ax, 0.2)
    ax.legend(fontsize=8, loc="upper center", ncol=len(series))
    p.save(fig, p.name("roundtrip-large", stem, first),
           "N=1024 and N=4096 matmul round trips per GPU (torch's figure is in python-large.png)")


def plot_roundtrip_device(p, devices, label, stem, first):
    """Host time of a call beside the device's own time for its dispatches (device_timing rows)."""
    timed = [d for d in devices if isinstance(d.get("device_timing"), dict)]
    if not timed:
        p.skip(f"{stem}: device time", "no device_timing rows (devices that cannot time, or a bench from before "
               "Device::set_device_timing)")
        return
    groups = [f"{d['device']}\n{short_name(d.get('name'), 20)}" for d in timed]
    series = {
        "N=16 matmul round trip (host)": [median(d.get("matmul16_round_trip"), 1e6) for d in timed],
        "its dispatches (device timer)": [us(d["device_timing"].get("matmul16_dispatches_s")) for d in timed],
        "batched axpy per dispatch (host)": [us(d.get("batched_per_dispatch_s")) for d in timed],
        "per dispatch (device timer)": [us(d["device_timing"].get("batched_per_dispatch_s")) for d in timed],
    }
    fig, ax = new_fig("vgpu-bench-roundtrip: host time per call beside the device's own timer", label)
    grouped_bars(ax, groups, series, "time (µs)", log=True)
    headroom(ax, 0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    p.save(fig, p.name("roundtrip-device", stem, first),
           "the N=16 matmul round trip and a batched dispatch on the host beside what the device's timer measured")


# ---------------------------------------------------------------------------------------------
# 2. vgpu-bench-arrays


def plot_arrays(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    rows = doc.get("rows") or []
    if not rows:
        p.skip(f"{stem} (vgpu-bench-arrays)", "no device rows in the file")
        return
    groups = [f"{r['device']}\nN={r.get('n', '?')}" + ("" if r.get("checked", True) else "\nWRONG") for r in rows]
    cases = [("arrays chain", "arrays"), ("device-only (one Batch)", "device_only"),
             ("host-array chain (Cache::matmul)", "host")]
    series = {t: [median(r.get(k), 1e3) for r in rows] for t, k in cases}
    errors = {t: [stat_range(r.get(k), 1e3) for r in rows] for t, k in cases}
    fig, ax = new_fig("vgpu-bench-arrays: a chain of 10 dependent N×N matmuls (median; whiskers: min–max)", label)
    grouped_bars(ax, groups, series, "time per chain (ms)", log=True, errors=errors)
    for g, r in enumerate(rows):
        a, d = median(r.get("arrays"), 1), median(r.get("device_only"), 1)
        top = max([(e or (0, 0))[1] for e in (errors[t][g] for t in series)] + [v[g] or 0 for v in series.values()])
        if a and d:
            ratio = a / d
            ax.annotate(f"arrays / device-only {ratio:.2f}×\n(goal ≤ 1.1×: {'met' if ratio <= 1.1 else 'missed'})",
                        (g, top), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=7)
    headroom(ax, 0.35)
    ax.legend(fontsize=8, loc="upper center", ncol=3)
    p.save(fig, p.name("arrays-chain", stem, first),
           "10-matmul chain per device: vgpu::Array chain vs device-only Batch vs host-array chain (log scale)")

    stacked = [r for r in rows if isinstance(r.get("stack"), dict)]
    if not stacked:
        p.skip(f"{stem}: stack table", "no 'stack' entries in the file (an older vgpu-bench-arrays)")
        return
    cases = [("(64,128,128) @ (64,128,128): one launch", "one_launch"), ("64 separate 128×128 matmuls", "per_product")]
    series = {t: [median(r["stack"].get(k), 1e3) for r in stacked] for t, k in cases}
    errors = {t: [stat_range(r["stack"].get(k), 1e3) for r in stacked] for t, k in cases}
    fig, ax = new_fig("vgpu-bench-arrays: a stack of 64 products of 128×128 (median; whiskers: min–max)", label)
    grouped_bars(ax, [r["device"] + ("" if r["stack"].get("checked", True) else "\nWRONG") for r in stacked],
                 series, "time per stack (ms)", errors=errors)
    headroom(ax, 0.2)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    p.save(fig, p.name("arrays-stack", stem, first),
           "the batched kernel's one launch vs 64 matmuls of separate arrays, per device")


# ---------------------------------------------------------------------------------------------
# 3. bench/arrays_cpu.py


def plot_arrays_cpu(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    rows = [r for r in doc.get("sizes") or [] if isinstance(r, dict) and "n" in r]
    for e in doc.get("errors") or []:
        print(f"note    {stem}: the run reported an error: {e}")
    if not rows:
        p.skip(f"{stem} (arrays_cpu.py)", "no per-N rows in the file")
        return
    ns = [r["n"] for r in rows]
    fig, ax = new_fig("arrays_cpu.py: N×N float32 matmul on the CPU, per call (median)", label)
    for title, key, style in [("vgpu Python (Cache.matmul, cpu:0)", "vgpu_python_s", "o-"),
                              ("vgpu C++ (vgpu-bench-python-ref)", "vgpu_cpp_s", "s--"),
                              ("numpy A @ B", "numpy_s", "^-"), ("torch A @ B (CPU)", "torch_s", "d-")]:
        pts = [(r["n"], us(r.get(key))) for r in rows if r.get(key)]
        if pts:
            ax.plot(*zip(*pts), style, label=title)
        else:
            print(f"note    {stem}: no '{title}' values (absent in this run)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns])
    ax.set_xlabel("N (N×N @ N×N)")
    ax.set_ylabel("time per call (µs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    p.save(fig, p.name("arrays-cpu-time", stem, first),
           "vgpu Python, vgpu C++, numpy and torch per call vs N (log-log)")

    fig, ax = new_fig("arrays_cpu.py: their time / vgpu's time (above the line: vgpu is faster)", label)
    drew = False
    for title, key, goal, style in [("numpy / vgpu Python", "numpy_s", 1.0, "o-"),
                                    ("torch / vgpu Python", "torch_s", 0.95, "d-")]:
        pts = [(r["n"], r[key] / r["vgpu_python_s"]) for r in rows if r.get(key) and r.get("vgpu_python_s")]
        if not pts:
            continue
        line, = ax.plot(*zip(*pts), style, label=title)
        ax.axhline(goal, color=line.get_color(), linestyle=":", linewidth=1.2, label=f"goal ≥ {goal:g} ({title})")
        drew = True
    if not drew:
        plt.close(fig)
        p.skip(f"{stem}: ratio plot", "no N with both vgpu's and numpy's (or torch's) time")
        return
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns])
    ax.set_xlabel("N (N×N @ N×N)")
    ax.set_ylabel("ratio of per-call medians (×)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    p.save(fig, p.name("arrays-cpu-ratio", stem, first), "numpy / vgpu and torch / vgpu per N with the goal lines")


# ---------------------------------------------------------------------------------------------
# 4. bench/python_overhead.py


def plot_python_overhead(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    for e in doc.get("errors") or []:
        print(f"note    {stem}: the run reported an error: {e}")

    # Part 1: N=16 on cpu:0, best and median per side, with the goals drawn against Python.
    over = (doc.get("overhead") or [None])[0]
    if over:
        sides = [("vgpu Python", "python"), ("vgpu C++", "cpp"), ("numpy A @ B", "numpy")]
        series = {"best sample": [us(over.get(f"{k}_s")) for _, k in sides],
                  "median": [us(over.get(f"{k}_median_s")) for _, k in sides]}
        fig, ax = new_fig(f"python_overhead.py part 1: call overhead at N={over.get('n', 16)} on "
                          f"{over.get('device', 'cpu:0')}", label)
        grouped_bars(ax, [s for s, _ in sides], series, "time per call (µs)", log=False)
        ax.set_xlabel("N=16 float32 matmul: Cache.matmul from Python, the same call in C++, numpy")
        if over.get("cpp_s"):
            ax.axhline(us(over["cpp_s"]) + 1.5, color="black", linestyle="--", linewidth=1,
                       label="goal: Python ≤ C++ + 1.5 µs (best)")
        if over.get("numpy_s"):
            ax.axhline(us(over["numpy_s"]) * 2, color="gray", linestyle=":", linewidth=1.2,
                       label="goal: Python ≤ 2× numpy (best)")
        headroom(ax, 0.25)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
        p.save(fig, p.name("python-overhead-n16", stem, first),
               "part 1: N=16 per-call time of vgpu Python, C++ and numpy (best and median) with the goals")
    else:
        p.skip(f"{stem}: part 1 (call overhead)", "no 'overhead' entry")

    # Part 2: per-call time vs N per device, Python solid and C++ dashed; numpy once.
    sizes = doc.get("sizes") or []
    if sizes:
        fig, ax = new_fig("python_overhead.py part 2: N×N matmul per call from Python and C++, per device (median)",
                          label)
        rows = sorted(sizes, key=lambda r: (r["n"], r["device"]))
        groups = [f"{r['device']}\nN={r['n']}" + ("" if r.get("correct", True) else "\nWRONG") for r in rows]
        series = {"vgpu Python (Cache.matmul)": [us(r.get("python_s")) for r in rows],
                  "vgpu C++ (vgpu-bench-python-ref)": [us(r.get("cpp_s")) for r in rows],
                  "numpy A @ B (host)": [us(r.get("numpy_s")) for r in rows]}
        grouped_bars(ax, groups, series, "time per call (µs)")
        headroom(ax, 0.2)
        ax.legend(fontsize=8, loc="upper center", ncol=3)
        p.save(fig, p.name("python-sizes", stem, first),
               "part 2: per-call time per device and N, Python beside C++ and numpy")
    else:
        p.skip(f"{stem}: part 2 (sizes per device)", "no 'sizes' entries")

    # Part 3: the seed's moderngl cache beside vgpu's devices, per N.
    seed = doc.get("seed") or []
    if seed:
        ns = sorted({r["n"] for r in seed})
        cases = list(dict.fromkeys(r["case"] for r in seed))
        by = {(r["case"], r["n"]): r for r in seed}
        series = {c: [us(by[(c, n)]["per_call_s"]) if (c, n) in by else None for n in ns] for c in cases}
        fig, ax = new_fig("python_overhead.py part 3: the seed's moderngl cache vs vgpu (per call, median)", label)
        grouped_bars(ax, [f"N={n}" for n in ns], series, "time per call (µs)")
        headroom(ax, 0.25)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
        p.save(fig, p.name("python-seed", stem, first), "part 3: seed moderngl VGPUCache vs vgpu's devices per N")
    else:
        why = next((n for n in doc.get("notes") or [] if "seed" in n), "no 'seed' entries")
        p.skip(f"{stem}: part 3 (seed comparison)", why)

    # Part 4: large round trips beside torch's CUDA round trip.
    large = doc.get("large") or []
    if large:
        ns = sorted({r["n"] for r in large})
        cases = list(dict.fromkeys(r["case"] for r in large))
        by = {(r["case"], r["n"]): r for r in large}
        series = {c: [ms(by[(c, n)]["per_call_s"]) if (c, n) in by else None for n in ns] for c in cases}
        fig, ax = new_fig("python_overhead.py part 4: large matmul round trips (host → host) beside torch CUDA",
                          label)
        where, _ = grouped_bars(ax, [f"N={n}" for n in ns], series, "time per call (ms)")
        for (c, g), x in where.items():
            r = by[(c, ns[g])]
            if r.get("over_torch") and not c.startswith("torch"):
                ax.annotate(f"{r['over_torch']:.2f}×", (x, series[c][g]), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)
        headroom(ax, 0.3)
        ax.legend(fontsize=8, loc="upper center", ncol=2, title="bar labels: time / torch's (goal ≤ 1.0×)",
                  title_fontsize=7)
        p.save(fig, p.name("python-large", stem, first), "part 4: N=1024/4096 round trips per GPU beside torch CUDA")
    else:
        why = next((n for n in doc.get("notes") or [] if "part 4" in n), "no 'large' entries (a --quick run has none)")
        p.skip(f"{stem}: part 4 (large round trips)", why)


# ---------------------------------------------------------------------------------------------
# 5. vgpu-bench-gpu


def plot_gpu(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    for f in doc.get("failures") or []:
        p.skip(f"{stem}: device {f.get('device')}", f"the bench failed there: {f.get('error')}")
    devices = [d for d in doc.get("devices") or [] if isinstance(d.get("matmul_gflops"), dict)]
    if not devices:
        p.skip(f"{stem} (vgpu-bench-gpu)", "no device with matmul GFLOP/s in the file (no GPU device found?)")
        return
    fig, ax = new_fig("vgpu-bench-gpu: N×N float32 matmul kernel throughput (dispatch + synchronize)", label)
    cublas = {}
    values = []
    for d in devices:
        pts = sorted((int(n), gf) for n, gf in d["matmul_gflops"].items() if gf)
        name = f"{d.get('id', '?')} {short_name(d.get('name'), 18)}"
        line, = ax.plot([n for n, _ in pts], [g for _, g in pts], "o-", label=f"{name}: plan's choice")
        values += [g for _, g in pts]
        best = {}
        for table in ("cuda_tilings_gflops", "glsl_tilings_gflops"):
            for key, t in (d.get(table) or {}).items():
                n = int(key.rsplit("@", 1)[1])
                best[n] = max(best.get(n, 0), t.get("gflops") or 0)
                if t.get("cublas_gflops"):
                    cublas[n] = t["cublas_gflops"]
        if best:
            bpts = sorted(best.items())
            ax.plot([n for n, _ in bpts], [g for _, g in bpts], "x:", color=line.get_color(), alpha=0.8,
                    label=f"{name}: fastest tiling (tilings table)")
            values += [g for _, g in bpts]
        for n, g in (d.get("cublas_gflops") or {}).items():
            if g:
                cublas[int(n)] = g
    if cublas:
        cpts = sorted(cublas.items())
        ax.plot([n for n, _ in cpts], [g for _, g in cpts], "ks-", label="cuBLAS SGEMM (TF32 off)")
        values += [g for _, g in cpts]
    else:
        print(f"note    {stem}: no cuBLAS figures (no CUDA device or cuBLAS on that machine)")
    ns = sorted({n for line in ax.get_lines() for n in line.get_xdata()})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(int(n)) for n in ns])
    ax.set_xlim(ns[0] / 1.4, ns[-1] * 1.4)
    if wants_log(values):
        ax.set_yscale("log")
    ax.set_xlabel("N (N×N @ N×N)")
    ax.set_ylabel("GFLOP/s (2N³ / time)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    p.save(fig, p.name("gpu-matmul", stem, first),
           "matmul GFLOP/s per device vs N (plan's choice, fastest tiling)" + (", cuBLAS" if cublas else ""))


# ---------------------------------------------------------------------------------------------
# 6. bench/cpu_reference.py


def plot_cpu_reference(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    rows = [r for r in doc.get("rows") or [] if isinstance(r, dict) and "n" in r]
    if not rows:
        p.skip(f"{stem} (cpu_reference.py)", "no per-N rows in the file")
        return
    fig, ax = new_fig("cpu_reference.py: N×N float32 matmul on the CPU, GFLOP/s at the median", label)
    for title, key, style in [("vgpu kernel (resident buffers)", "vgpu_kernel", "o-"),
                              ("vgpu Python call (with copies)", "vgpu_call", "s--"),
                              ("numpy A @ B", "numpy", "^-"), ("torch.mm", "torch", "d-")]:
        pts = [(r["n"], 2.0 * r["n"] ** 3 / r[key][0] / 1e9) for r in rows if r.get(key)]
        if pts:
            ax.plot(*zip(*pts), style, label=title)
    ns = [r["n"] for r in rows]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns])
    ax.set_xlabel("N (N×N @ N×N)")
    ax.set_ylabel("GFLOP/s (2N³ / median time)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    p.save(fig, p.name("cpu-reference", stem, first), "CPU matmul GFLOP/s: vgpu kernel and call, numpy, torch")


# ---------------------------------------------------------------------------------------------
# 7. vgpu-bench-select --json


def plot_select(p, doc, stem, first):
    label = label_for(doc, p.explicit_label)
    cases = [c for c in doc.get("cases") or [] if isinstance(c, dict) and c.get("op") and c.get("chosen")]
    if not cases:
        p.skip(f"{stem} (vgpu-bench-select)", "no case with a chosen device in the file")
        return
    ops = list(dict.fromkeys(c["op"] for c in cases))
    devices = sorted({c["chosen"] for c in cases} | {c.get("fastest") for c in cases if c.get("fastest")})
    colours = {d: plt.get_cmap("tab10")(i % 10) for i, d in enumerate(devices)}
    width = max(len([c for c in cases if c["op"] == op]) for op in ops)
    fig, ax = new_fig("vgpu-bench-select: the device chosen per op and size (label: chosen time / fastest time)",
                      label)
    for row, op in enumerate(ops):
        for col, c in enumerate([c for c in cases if c["op"] == op]):
            ratio = c.get("ratio")
            ax.add_patch(matplotlib.patches.Rectangle((col, row), 0.95, 0.9, color=colours[c["chosen"]],
                                                      alpha=0.85 if c.get("ratio_ok", True) else 0.35))
            text = f"{c.get('size', '')}\n{c['chosen']}" + (f"\n×{ratio:.2f}" if isinstance(ratio, (int, float)) else "")
            if not c.get("ratio_ok", True):
                text += f"\n(fastest {c.get('fastest')})"
            ax.text(col + 0.475, row + 0.45, text, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, width)
    ax.set_ylim(len(ops), 0)
    ax.set_yticks([r + 0.45 for r in range(len(ops))])
    ax.set_yticklabels(ops)
    ax.set_xticks([])
    ax.set_xlabel(f"sizes, smallest first; {doc.get('cases_within_target', '?')} of {doc.get('cases_total', '?')} "
                  f"within {doc.get('target_ratio', '?')}× of the fastest (faded: not)")
    handles = [matplotlib.patches.Patch(color=colours[d], label=d) for d in devices]
    ax.legend(handles=handles, fontsize=7, loc="lower right", title="chosen device")
    p.save(fig, p.name("selection", stem, first), "the selection's choice per op × size, against the fastest device")


# ---------------------------------------------------------------------------------------------
# Finding and matching the files

PLOTTERS = {"roundtrip": plot_roundtrip, "arrays": plot_arrays, "arrays_cpu": plot_arrays_cpu,
            "python_overhead": plot_python_overhead, "gpu": plot_gpu, "cpu_reference": plot_cpu_reference,
            "select": plot_select}
BENCH_FIELD = {"vgpu-bench-roundtrip": "roundtrip", "arrays": "arrays", "vgpu-bench-arrays": "arrays"}
# File names tools/gpu-run.sh and the docs use (the stem, lower case, '_' read as '-').
BY_NAME = [("roundtrip", "roundtrip"), ("arrays-cpu", "arrays_cpu"), ("python-bench", "python_overhead"),
           ("python-overhead", "python_overhead"), ("cpu-reference", "cpu_reference"), ("bench-gpu", "gpu"),
           ("bench-select", "select"), ("arrays", "arrays")]


def kind_of(stem, doc):
    """Returns (kind or None, how it was matched or why not)."""
    if not isinstance(doc, dict):
        return None, "not a JSON object"
    bench = doc.get("bench")
    if bench is not None:
        if bench in BENCH_FIELD:
            return BENCH_FIELD[bench], f'"bench": "{bench}"'
        return None, f'no plotter for "bench": "{bench}"'
    s = stem.lower().replace("_", "-")
    for part, kind in BY_NAME:
        if part in s:
            return kind, f"file name ({part})"
    # Last resort: the shape the known benches write.
    devices = doc.get("devices") if isinstance(doc.get("devices"), list) else []
    if any(isinstance(d, dict) and "matmul_gflops" in d for d in devices):
        return "gpu", "shape (devices[].matmul_gflops)"
    if "overhead" in doc and "large" in doc:
        return "python_overhead", "shape (overhead, large)"
    if "dlpack" in doc and "sizes" in doc:
        return "arrays_cpu", "shape (sizes, dlpack)"
    if "rows" in doc and "cpp" in doc:
        return "cpu_reference", "shape (rows, cpp)"
    if "cases" in doc and "target_ratio" in doc:
        return "select", "shape (cases, target_ratio)"
    return None, "no plotter for this file (neither its 'bench' field, its name nor its shape is one this tool knows)"


def load_all(results):
    """Yields (name, stem, doc or None, error) for every *.json under results and every JSON
    member of a *.tar.gz / *.tgz there."""
    files = sorted(results.rglob("*.json"))
    for f in files:
        try:
            yield str(f), f.stem, json.loads(f.read_text()), None
        except (OSError, ValueError) as e:
            yield str(f), f.stem, None, f"unreadable JSON ({e})"
    for arc in sorted(list(results.rglob("*.tar.gz")) + list(results.rglob("*.tgz"))):
        try:
            with tarfile.open(arc, "r:gz") as tar:
                for m in tar.getmembers():
                    if not (m.isfile() and m.name.endswith(".json")):
                        continue
                    name = f"{arc}:{m.name}"
                    stem = pathlib.PurePosixPath(m.name).stem
                    try:
                        yield name, stem, json.load(io.TextIOWrapper(tar.extractfile(m), encoding="utf-8")), None
                    except (OSError, ValueError) as e:
                        yield name, stem, None, f"unreadable JSON ({e})"
        except (OSError, tarfile.TarError) as e:
            yield str(arc), arc.name, None, f"unreadable archive ({e})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("results", metavar="RESULTS_DIR", type=pathlib.Path,
                    help="directory of benchmark JSON files (and/or results-json*.tar.gz)")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent / "docs" / "img",
                    help="where the PNGs go (default docs/img of this checkout)")
    ap.add_argument("--label", default=None,
                    help='machine label for the titles, e.g. "H200, 2026-12-04" (default: from each JSON)')
    args = ap.parse_args()
    if not args.results.is_dir():
        sys.exit(f"plot_benchmarks.py: {args.results} is not a directory. Fix: give the directory the JSON "
                 "files (or the results-json*.tar.gz archives) are in.")
    p = Plotter(args.out, args.label)
    seen = {}
    contents = {}  # the same results twice (an archive and its unpacked files) are plotted once
    found = 0
    for name, stem, doc, error in load_all(args.results):
        found += 1
        if error:
            p.skip(name, error)
            continue
        key = json.dumps(doc, sort_keys=True)
        if key in contents:
            p.skip(name, f"the same results as {contents[key]}")
            continue
        contents[key] = name
        kind, how = kind_of(stem, doc)
        if kind is None:
            p.skip(name, how)
            continue
        print(f"reading {name} as {kind} (matched by {how})")
        first = kind not in seen
        seen[kind] = seen.get(kind, 0) + 1
        try:
            PLOTTERS[kind](p, doc, stem, first)
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as e:
            plt.close("all")
            p.skip(name, f"unexpected content for {kind} ({type(e).__name__}: {e})")
    if found == 0:
        sys.exit(f"plot_benchmarks.py: no *.json (nor *.tar.gz with JSON) under {args.results}.")
    missing = [k for k in PLOTTERS if k not in seen]
    if missing:
        print(f"not present: {', '.join(missing)}")
    print(f"{len(p.drawn)} plot(s) drawn into {args.out}, {len(p.skipped)} skipped")
    return 0 if p.drawn else 1


if __name__ == "__main__":
    sys.exit(main())
