#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vgpu's CPU matmul beside numpy's A @ B and torch's CPU matmul, in one run (a benchmark,
never a timed test).

  1. vgpu's kernel: the C++ bench (vgpu-bench-cpu-kernels, or vgpu-bench-cpu-matmul) at the same
     sizes, run by this script now: Device::dispatch + synchronize on resident buffers, checked
     there against a double-precision reference (it exits 1 on a wrong result). Its second
     table, vgpu's elementwise ops and reduce_sum against a STREAM-style copy, is printed as is.
  2. numpy A @ B and torch.mm (when torch imports; said so when not) on the same float32
     arrays, each result spot-checked against a float64 sum; the vgpu Python call
     (vgpu.PersistentKernel, with its upload and read-back copies) too when the module imports.
  3. The ratios side by side: vgpu kernel / numpy, vgpu kernel / torch (GFLOP/s at the median).

    /usr/bin/python3 bench/cpu_reference.py [--sizes 256,1024,4096] [--bench build/bin/vgpu-bench-cpu-kernels]
                                            [--quick] [--json FILE]

numpy and torch use all cores by default, as vgpu does (oneTBB's default arena). Exit status 1
when any result is wrong or the C++ bench fails.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def spot_error(a, b, c, samples=256, seed=3):
    """Returns max |c_ij - exact_ij| / max |exact| over random entries, exact summed in float64."""
    rng = np.random.default_rng(seed)
    n = a.shape[0]
    i = rng.integers(0, n, samples)
    j = rng.integers(0, n, samples)
    exact = np.einsum("sk,ks->s", a[i].astype(np.float64), b[:, j].astype(np.float64))
    got = c[i, j].astype(np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = max(np.abs(exact).max(), 1e-30)
    return float(np.abs(got - exact).max() / scale)


def time_fn(fn, rounds, target):
    """Returns per-call seconds (median, best) over `rounds` samples of enough calls to last `target` s."""
    fn()  # warm-up
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(target / one))
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples), min(samples)


def find_bench(given):
    """Returns the C++ bench to run (given, then build/bin's no-BLAS one, then the OpenBLAS one), or None."""
    if given:
        return given
    for name in ("vgpu-bench-cpu-kernels", "vgpu-bench-cpu-matmul"):
        path = os.path.join(HERE, "..", "build", "bin", name)
        if os.access(path, os.X_OK):
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=None, help="comma-separated N (default 256,1024,4096; --quick 64,256)")
    ap.add_argument("--bench", default=os.environ.get("VGPU_BENCH_CPU_KERNELS"),
                    help="the C++ bench binary (default: build/bin/vgpu-bench-cpu-kernels)")
    ap.add_argument("--quick", action="store_true", help="few samples, small sizes")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in (args.sizes or ("64,256" if args.quick else "256,1024,4096")).split(",")]
    except ValueError:
        sizes = [0]
    if any(n <= 0 for n in sizes):
        sys.exit(f"cpu_reference.py: bad --sizes '{args.sizes}'. Fix: give positive comma-separated N, e.g. 256,1024,4096.")
    rounds, target = (3, 0.01) if args.quick else (9, 0.2)
    ok = True
    results = {"machine": {"cpu": platform.processor(), "cores": os.cpu_count(), "numpy": np.__version__,
                           "load": os.getloadavg()}, "sizes": sizes, "rows": [], "notes": []}

    def note(text):
        print(f"  note: {text}")
        results["notes"].append(text)

    try:
        import torch  # noqa: PLC0415 (optional)
        torch_threads = torch.get_num_threads()
        results["machine"]["torch"] = torch.__version__
    except Exception as e:  # ImportError, or a broken install
        torch = None
        torch_threads = None
        torch_reason = f"{type(e).__name__}: {e}"
    try:
        import vgpu  # noqa: PLC0415 (optional: only for the call column)
    except Exception:
        vgpu = None
    print(f"# vgpu CPU matmul vs numpy and torch — {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} logical CPUs, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"numpy {np.__version__}; torch {torch.__version__ + f' ({torch_threads} threads)' if torch else 'not importable'}"
          f"; vgpu Python module {'imported' if vgpu else 'not importable (no call column)'}")
    if torch is None:
        note(f"torch is not importable with this interpreter ({torch_reason}): no torch column (pip install torch, "
             "or run with the interpreter that has it)")

    # 1. The C++ bench: vgpu's kernel, checked there.
    bench = find_bench(args.bench)
    kernel = {}
    if bench is None:
        note("no C++ bench found (build vgpu-bench-cpu-kernels, or pass --bench): no vgpu kernel column")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cpu.json")
            env = dict(os.environ, VGPU_BENCH_CPU_SIZES=",".join(map(str, sizes)))
            cmd = [bench, "--json", out] + (["--quick"] if args.quick else [])
            print(f"\n## 1. {' '.join(cmd)} (VGPU_BENCH_CPU_SIZES={env['VGPU_BENCH_CPU_SIZES']})\n", flush=True)
            status = subprocess.call(cmd, env=env)
            if status != 0:
                print(f"ERROR: {bench} exited {status} (a wrong result, or it could not run)")
                ok = False
            if os.path.exists(out):
                with open(out) as f:
                    doc = json.load(f)
                for row in doc.get("results", []):
                    kernel[row["n"]] = (row["vgpu_kernel"]["median_s"], row["vgpu_kernel"]["min_s"])
                results["cpp"] = doc

    # 2. numpy, torch and the vgpu call, interleaved per size.
    print("\n## 2. numpy A @ B, torch.mm and the vgpu Python call (float32, per-call median; GFLOP/s)\n")
    table = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        flop = 2.0 * n ** 3
        row = {"n": n}
        c = a @ b
        err = spot_error(a, b, c)
        row["numpy_err"] = err
        ok = ok and err <= 1e-4
        row["numpy"] = time_fn(lambda: a @ b, rounds, target)
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            err = spot_error(a, b, torch.mm(ta, tb).numpy())
            row["torch_err"] = err
            ok = ok and err <= 1e-4
            row["torch"] = time_fn(lambda: torch.mm(ta, tb), rounds, target)
        if vgpu is not None:
            try:
                pk = vgpu.PersistentKernel("matmul", (n, n, n), device="cpu:0")
                err = spot_error(a, b, np.asarray(pk(a, b)).reshape(n, n))
                row["vgpu_call_err"] = err
                ok = ok and err <= 1e-4
                row["vgpu_call"] = time_fn(lambda: pk(a, b), rounds, target)
            except Exception as e:  # a module without the CPU device, say
                note(f"vgpu call at N={n} failed: {e}")
        if n in kernel:
            row["vgpu_kernel"] = kernel[n]
        results["rows"].append(row)
        gf = lambda key: f"{flop / row[key][0] / 1e9:.0f} ({flop / row[key][1] / 1e9:.0f})" if key in row else "—"  # noqa: E731
        ratio = lambda key: f"{row[key][0] / row['vgpu_kernel'][0]:.2f}" if key in row and "vgpu_kernel" in row else "—"  # noqa: E731
        table.append([str(n), gf("vgpu_kernel"), gf("numpy"), gf("torch"), ratio("numpy"), ratio("torch"),
                      gf("vgpu_call")])
        for key in ("numpy", "torch", "vgpu_kernel"):
            if key in row and "vgpu_kernel" in row and key != "vgpu_kernel":
                row[f"ratio_vgpu_kernel_over_{key}"] = row[key][0] / row["vgpu_kernel"][0]

    head = ["N", "vgpu kernel", "numpy A@B", "torch.mm", "vgpu/numpy", "vgpu/torch", "vgpu call (copies)"]
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(head)]
    print(" | ".join(h.rjust(w) for h, w in zip(head, widths)))
    print("-|-".join("-" * w for w in widths))
    for r in table:
        print(" | ".join(v.rjust(w) for v, w in zip(r, widths)))
    print("\n## 3. GFLOP/s as median (best). vgpu/numpy, vgpu/torch = vgpu kernel GFLOP/s over theirs at the median "
          "(goal >= 0.95). numpy, torch and vgpu call results spot-checked against float64 (limit 1e-4); the "
          "kernel is checked by the C++ bench. The C++ part ran first, then numpy and torch: same run, not interleaved.")
    if not ok:
        print("ERROR: a result is wrong (see above).")
    results["correct"] = ok
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
