#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CPU tier against what it replaces, side by side in one run (a benchmark, never a test):

  1. Cache.matmul on cpu:0 from Python at N = 16, 64, 256, 1024, 4096, the same call in C++
     (vgpu-bench-python-ref, run now), numpy's A @ B and torch's (CPU tensors over the same
     memory): per-call medians of samples taken in blocks (each library's thread pool idle
     before the next one's block) and the ratios numpy / vgpu (goal ≥ 1.0)
     and torch / vgpu (goal ≥ 0.95). Python − C++ at N = 16 is the binding's overhead (goal ≤ 1 µs).
  2. DLPack exchange: vgpu.from_dlpack(torch tensor) and torch.from_dlpack(vgpu array), per call
     (goal ≤ 5 µs), each checked to share the address (0 bytes copied).

    PYTHONPATH=build/python /usr/bin/python3 bench/arrays_cpu.py [--quick] [--json FILE]

--quick takes N = 16, 64, 256 and few samples. Every result is checked against numpy; a wrong
one is reported and makes the exit status 1. torch is optional (Debian: python3-torch); without
it its columns say so.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

try:
    import vgpu
except ImportError as e:
    sys.exit(f"arrays_cpu.py: cannot import vgpu ({e}). Fix: run with PYTHONPATH=build/python and the interpreter "
             f"the module was built for (build/CMakeCache.txt: Python_EXECUTABLE).")
try:
    import torch
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))


def per_call(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def blocks(cases, rounds, target):
    """Median seconds per call of each case, sampled in blocks: each case's samples back to back,
    the cases in turn, three turns. Per-call round-robin would time each library while the
    others' thread pools still spin (torch's OpenMP and numpy's OpenBLAS threads busy-wait after
    a call, vgpu's oneTBB workers too), which measured the contention, not the libraries; a
    pause before each block lets the previous library's threads go to sleep."""
    inner = []
    for fn in cases:
        fn()  # warm-up
        n = 1
        while per_call(fn, n) * n < target and n < 1 << 16:
            n *= 2
        inner.append(n)
    samples = [[] for _ in cases]
    for _ in range(3):
        for i, fn in enumerate(cases):
            time.sleep(0.3)
            fn()
            for _ in range(max(1, rounds // 3)):
                samples[i].append(per_call(fn, inner[i]))
    return [statistics.median(s) for s in samples]


def cpp_reference(n, samples, calls):
    exe = None
    for c in (os.path.join(HERE, "..", "build", "bin", "vgpu-bench-python-ref"),
              os.path.join(HERE, "..", ".gpu", "bin", "vgpu-bench-python-ref"), shutil.which("vgpu-bench-python-ref")):
        if c and os.path.exists(c):
            exe = c
            break
    if not exe:
        return None
    r = subprocess.run([exe, "--device", "cpu:0", "--n", str(n), "--samples", str(samples), "--calls", str(calls)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("median_s")


def fmt(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [16, 64, 256] if args.quick else [16, 64, 256, 1024, 4096]
    rounds = 6 if args.quick else 12
    print(f"# arrays_cpu.py{'  (--quick)' if args.quick else ''}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} hardware threads; "
          f"numpy {np.__version__}, torch {torch.__version__ if torch else 'absent'}, vgpu {vgpu.__version__}")
    print(f"load average at start: {os.getloadavg()}\n")
    cache = vgpu.Cache("cpu:0")
    rng = np.random.default_rng(5)
    results = {"sizes": [], "dlpack": {}, "errors": []}
    print("| N | vgpu Python | vgpu C++ | numpy | torch | numpy / vgpu (goal ≥ 1.0) | torch / vgpu (goal ≥ 0.95) |"
          " Python − C++ |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        want = a.astype(np.float64) @ b
        got = cache.matmul(a, b)
        if np.abs(got - want).max() > 1e-3 * max(1.0, np.abs(want).max()) * n ** 0.5:
            results["errors"].append(f"N={n}: vgpu's result differs from numpy's")
        cases = [lambda: cache.matmul(a, b), lambda: a @ b]
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            cases.append(lambda: ta @ tb)
        target = 0.002 if args.quick else 0.02
        t = blocks(cases, rounds, target)
        calls = max(1, int(target / max(t[0], 1e-9)))
        cpp = cpp_reference(n, rounds, calls)
        tv, tn = t[0], t[1]
        tt = t[2] if torch is not None else None
        row = {"n": n, "vgpu_python_s": tv, "vgpu_cpp_s": cpp, "numpy_s": tn, "torch_s": tt}
        results["sizes"].append(row)
        print(f"| {n} | {fmt(tv)} | {fmt(cpp) if cpp else 'n/a'} | {fmt(tn)} | {fmt(tt) if tt else 'n/a'} | "
              f"{tn / tv:.2f}x | {(tt / tv) if tt else float('nan'):.2f}x | "
              f"{fmt(tv - cpp) if cpp else 'n/a'} |")
    if torch is not None:
        t = torch.rand(256, 256)
        arr = vgpu.asarray(np.ones((256, 256), np.float32), device="cpu:0")
        if vgpu.from_dlpack(t).data_ptr != t.data_ptr() or torch.from_dlpack(arr).data_ptr() != arr.data_ptr:
            results["errors"].append("DLPack exchange copied (addresses differ)")
        imp, exp = blocks([lambda: vgpu.from_dlpack(t), lambda: torch.from_dlpack(arr)], rounds, 0.01)
        results["dlpack"] = {"vgpu_from_torch_s": imp, "torch_from_vgpu_s": exp}
        print(f"\nDLPack, per call (goal ≤ 5 µs, 0 bytes copied: addresses checked): vgpu.from_dlpack(torch) "
              f"{fmt(imp)}, torch.from_dlpack(vgpu) {fmt(exp)}")
    print(f"\nload average at end: {os.getloadavg()}")
    for e in results["errors"]:
        print("ERROR:", e)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
