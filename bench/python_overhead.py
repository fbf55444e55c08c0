#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vgpu's Python call overhead, side by side in one run (a benchmark, never a timed test).

  1. N=16 on the CPU device: vgpu.Cache.matmul from Python, the same call in C++
     (vgpu-bench-python-ref, run by this script now) and numpy's A @ B; per-call medians and the
     ratios Python - C++ (goal <= 1.5 us) and Python / numpy (goal <= 2x).
  2. N=256 and N=1024 on every device found: Python, C++ and numpy again (software GPUs —
     llvmpipe, lavapipe — skip 1024: one call takes seconds there).
  3. The seed's own moderngl VGPUCache (bench/seed_moderngl.py, a reconstruction) beside vgpu's
     OpenGL, Vulkan and CPU devices at N=16/256/1024, when moderngl and an EGL context exist; the
     cases of one size are sampled round-robin, each printed as a ratio to the seed, and on a
     software GL the N=16 ratio is judged against issue 16's goal (<= 1.0x).
  4. Large round trips (issues 16 and 31): N=1024, 2048 and 4096 matmul from host arrays to a host result on
     every GPU device, beside PyTorch's CUDA round trip in the same run (from_numpy → .cuda() →
     A @ B → .cpu(): the pageable copy path, TF32 off), as a ratio (goal <= 1.0x). Software GPUs
     are skipped (seconds per call); without torch or a CUDA device it says so and skips. On
     CUDA devices also with A, B and out registered (vgpu.asarray(x, copy=False) kept alive):
     the copies DMA from and to numpy's memory without staging.

Run it with the interpreter the module was built for, the package on PYTHONPATH:

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--quick] [--json FILE]

It installs nothing. --quick (the ctest smoke test) takes few samples at small sizes (16/64).
Every result is checked against numpy; a wrong result is reported and makes the exit status 1.
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
except ImportError as e:  # the usual cause: PYTHONPATH or the wrong interpreter
    sys.exit(f"python_overhead.py: cannot import vgpu ({e}). Fix: run with PYTHONPATH=build/python and the "
             f"interpreter the module was built for (build/CMakeCache.txt: Python_EXECUTABLE).")

HERE = os.path.dirname(os.path.abspath(__file__))
SOFTWARE_TYPES = {"software"}
RESULTS = {"machine": {}, "overhead": [], "sizes": [], "seed": [], "large": [], "notes": [], "errors": []}


def note(text):
    """Prints a line the reader must see (a skip and its reason) and keeps it for --json."""
    print(f"  note: {text}")
    RESULTS["notes"].append(text)


def machine():
    """Returns the header facts: CPU model, cores, load, Python, numpy and vgpu versions."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    return {"cpu": cpu, "cores": os.cpu_count(), "load": load,
            "python": platform.python_version(), "numpy": np.__version__, "vgpu": vgpu.__version__,
            "host": platform.node()}


def find_ref(explicit):
    """Returns the path of vgpu-bench-python-ref (the C++ side), or None."""
    candidates = [explicit, os.environ.get("VGPU_BENCH_PYTHON_REF")]
    pkg = os.path.dirname(os.path.abspath(vgpu.__file__))
    # build/python/vgpu -> build/bin; then the source tree's build/ and the GPU machine's .gpu/bin.
    candidates += [os.path.join(pkg, "..", "..", "bin", "vgpu-bench-python-ref"),
                   os.path.join(HERE, "..", "build", "bin", "vgpu-bench-python-ref"),
                   os.path.join(HERE, "..", ".gpu", "bin", "vgpu-bench-python-ref"),
                   shutil.which("vgpu-bench-python-ref")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.normpath(c)
    return None


def device_list():
    """Returns [(id, name, type)] of every device vgpu.devices() finds."""
    out = []
    for d in vgpu.devices():
        dev_id = d.id() if callable(getattr(d, "id", None)) else d.id
        # The type may be a string or an enum ("DeviceType.software"): keep its last word.
        dev_type = str(getattr(d, "type", "?")).rsplit(".", 1)[-1].lower()
        out.append((str(dev_id), str(getattr(d, "name", dev_id)), dev_type))
    return out


def calibrate(fn, target):
    """Returns how many calls of fn make one sample last about target seconds."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= target or n >= 1 << 20:
            return max(1, int(n * target / t + 0.5)) if t > 0 else n
        n *= 2


def sample(fn, calls):
    """Returns the per-call time of one sample of `calls` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def time_interleaved(fns, rounds, target, raw=None):
    """Times the callables round-robin (one sample each per round); returns per-call medians.
    raw: a list per callable that receives every sample too."""
    for fn in fns:
        fn()
    calls = [calibrate(fn, target) for fn in fns]
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            samples[i].append(sample(fn, calls[i]))
    if raw is not None:
        for r, s in zip(raw, samples):
            r.extend(s)
    return [statistics.median(s) for s in samples], calls


def run_ref(ref, device_id, n, samples, calls):
    """Runs the C++ side once; returns its JSON (with 'error' on failure)."""
    cmd = [ref, "--device", device_id, "--n", str(n), "--samples", str(samples), "--calls", str(calls)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 600 s"}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-400:] or p.stdout.strip()[-400:]}"}


def inputs(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)


def check(name, got, want):
    """Compares a result with numpy's; records and prints a mismatch. Returns True when right."""
    n = want.shape[1]
    tol = 1e-4 * max(1.0, np.sqrt(n)) * max(1.0, float(np.abs(want).max()))
    if got.shape == want.shape and got.dtype == np.float32 and np.allclose(got, want, rtol=1e-3, atol=tol):
        return True
    err = float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape else float("nan")
    msg = f"{name}: WRONG result (shape {got.shape} dtype {got.dtype}, max error {err:.3g})"
    print(f"  {msg}")
    RESULTS["errors"].append(msg)
    return False


def us(seconds):
    return "—" if seconds is None else f"{seconds * 1e6:,.2f}"


def fmt_row(cells, widths):
    return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))) + " |"


def table(headers, rows):
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    print(fmt_row(headers, widths))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt_row(r, widths))


def part_overhead(args, ref):
    """Part 1: Python vs C++ vs numpy at N=16 on the CPU device."""
    n = 16
    print(f"\n## 1. Call overhead at N={n} on cpu:0 (per-call time, µs: the best sample and the median)")
    cache = vgpu.Cache("cpu:0")
    A, B = inputs(n, 16)
    check("vgpu.Cache.matmul cpu:0 N=16", cache.matmul(A, B), A.astype(np.float64) @ B)
    py_fn = lambda: cache.matmul(A, B)  # noqa: E731
    np_fn = lambda: A @ B  # noqa: E731
    # Blocks alternate the C++ process with the Python samples, so load from other processes
    # reaches both sides alike. The goals are judged on the best sample of each side (as timeit
    # advises: a slower sample measures interference, not the call); medians are printed too.
    blocks, rounds, target = (1, 3, 0.002) if args.quick else (3, 7, 0.02)
    py_raw, np_raw, cpp_raw = [], [], []
    calls = None
    for _ in range(blocks):
        _, calls = time_interleaved([py_fn, np_fn], rounds, target, raw=(py_raw, np_raw))
        if ref:
            r = run_ref(ref, "cpu:0", n, rounds, calls[0])
            if "error" in r:
                RESULTS["errors"].append(f"vgpu-bench-python-ref cpu:0 N=16: {r['error']}")
                print(f"  vgpu-bench-python-ref failed: {r['error']}")
            else:
                cpp_raw.extend(r.get("per_call_s") or [r["median_s"]])
    py_t, np_t = min(py_raw), min(np_raw)
    cpp_t = min(cpp_raw) if cpp_raw else None
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    if not ref:
        note("vgpu-bench-python-ref not found (build it: cmake --build build --target vgpu-bench-python-ref, "
             "or pass --ref PATH): no C++ column")
    rows = [["vgpu.Cache.matmul (Python)", us(py_t), us(med(py_raw)), f"{calls[0]}"],
            ["vgpu::Cache::matmul (C++)", us(cpp_t), us(med(cpp_raw)), f"{calls[0]}" if cpp_t else "—"],
            ["numpy A @ B", us(np_t), us(med(np_raw)), f"{calls[1]}"]]
    table(["N=16 on cpu:0", "best µs/call", "median", "calls/sample"], rows)
    diff = None if cpp_t is None else py_t - cpp_t
    ratio = py_t / np_t
    print(f"Python − C++: {us(diff)} µs (best samples; goal ≤ 1.5 µs: "
          f"{'met' if diff is not None and diff <= 1.5e-6 else 'NOT met' if diff is not None else '—'})")
    print(f"Python / numpy: {ratio:.2f}x (best samples; goal ≤ 2x: {'met' if ratio <= 2 else 'NOT met'})")
    if cpp_raw:
        print(f"medians: Python − C++ {us(med(py_raw) - med(cpp_raw))} µs, Python / numpy "
              f"{med(py_raw) / med(np_raw):.2f}x")
    print(f"report after the run: {cache.report()}")
    RESULTS["overhead"].append({"n": n, "device": "cpu:0", "python_s": py_t, "cpp_s": cpp_t, "numpy_s": np_t,
                                "python_median_s": med(py_raw), "cpp_median_s": med(cpp_raw),
                                "numpy_median_s": med(np_raw),
                                "python_minus_cpp_s": diff, "python_over_numpy": ratio, "calls_per_sample": calls[0],
                                "blocks": blocks, "rounds": rounds, "statistic": "best sample"})


def part_sizes(args, ref, devices):
    """Part 2: Python vs C++ vs numpy at larger N on every device."""
    sizes = args.sizes
    print(f"\n## 2. matmul at N={', '.join(map(str, sizes))} on every device (per-call median, µs)")
    rows = []
    for n in sizes:
        A, B = inputs(n, n)
        want = A.astype(np.float64) @ B
        np_t = None
        for dev_id, name, dtype in devices:
            if dtype in SOFTWARE_TYPES and n > args.software_max_n:
                note(f"{dev_id} ({name}) skipped at N={n}: a software GPU takes seconds per call "
                     f"(--software-max-n {args.software_max_n})")
                continue
            try:
                cache = vgpu.Cache(dev_id)
                t0 = time.perf_counter()
                C = cache.matmul(A, B)
                first = time.perf_counter() - t0
            except vgpu.Error as e:
                msg = f"{dev_id} N={n}: {type(e).__name__}: {e}"
                print(f"  {msg}")
                RESULTS["errors"].append(msg)
                continue
            ok = check(f"vgpu.Cache.matmul {dev_id} N={n}", C, want)
            slow = dtype in SOFTWARE_TYPES or n >= 1024
            rounds = 1 if args.quick else (3 if slow else 5)
            target = 0.0 if slow or args.quick else 0.05
            fns = [lambda: cache.matmul(A, B)]
            if np_t is None:
                fns.append(lambda: A @ B)
            meds, calls = time_interleaved(fns, rounds, target)
            py_t = meds[0]
            if np_t is None:
                np_t = meds[1]
            cpp_t = None
            if ref:
                r = run_ref(ref, dev_id, n, rounds, calls[0])
                if "error" in r:
                    RESULTS["errors"].append(f"vgpu-bench-python-ref {dev_id} N={n}: {r['error']}")
                else:
                    cpp_t = r["median_s"]
            rows.append([f"{dev_id} ({name})", n, us(first), us(py_t), us(cpp_t),
                         us(None if cpp_t is None else py_t - cpp_t), f"{py_t / np_t:.2f}x", "ok" if ok else "WRONG"])
            RESULTS["sizes"].append({"n": n, "device": dev_id, "device_name": name, "device_type": dtype,
                                     "first_call_s": first, "python_s": py_t, "cpp_s": cpp_t, "numpy_s": np_t,
                                     "samples": rounds, "calls_per_sample": calls[0], "correct": ok})
        rows.append([f"numpy A @ B ({n})", n, "", us(np_t), "", "", "1.00x", ""])
    table(["device", "N", "first call", "Python", "C++", "Py − C++", "vs numpy", "result"], rows)


def part_seed(args, devices):
    """Part 3: the seed's moderngl VGPUCache beside vgpu's OpenGL, Vulkan and CPU devices."""
    print("\n## 3. The seed's moderngl VGPUCache (reconstruction) vs vgpu OpenGL, Vulkan and CPU (per-call median, µs, sampled round-robin)")
    try:
        import moderngl  # noqa: F401
    except ImportError as e:
        note(f"the seed reference is skipped: moderngl is not importable ({e}); on Debian: apt install python3-moderngl")
        return
    sys.path.insert(0, HERE)
    import seed_moderngl

    try:
        seed = seed_moderngl.VGPUCache()
    except Exception as e:  # moderngl raises plain Exception when EGL or GL 4.3 is missing
        note(f"the seed reference is skipped: no headless GL 4.3 context through EGL ({e})")
        return
    renderer = seed.renderer
    print(f"seed context: {renderer}")
    software = "llvmpipe" in renderer.lower() or "softpipe" in renderer.lower()
    ours = [(d, name, t) for d, name, t in devices
            if d.startswith("opengl:") or d.startswith("vulkan:") or d.startswith("cpu:")]
    rows = []
    for n in args.seed_sizes:
        A, B = inputs(n, 1000 + n)
        want = A.astype(np.float64) @ B
        cases = []
        if software and n > args.software_max_n:
            note(f"the seed on {renderer} skipped at N={n} (software GL; --software-max-n {args.software_max_n})")
        else:
            cases.append(("seed moderngl VGPUCache", renderer, seed.matmul))
        for dev_id, name, dtype in ours:
            if dtype in SOFTWARE_TYPES and n > args.software_max_n:
                note(f"{dev_id} ({name}) skipped at N={n} in the seed comparison (software GPU)")
                continue
            try:
                cache = vgpu.Cache(dev_id)
                cases.append((f"vgpu {dev_id}", name, cache.matmul))
            except vgpu.Error as e:
                RESULTS["errors"].append(f"seed part: {dev_id}: {e}")
        firsts = []
        for label, name, fn in cases:
            t0 = time.perf_counter()
            C = fn(A, B)
            firsts.append((time.perf_counter() - t0, check(f"{label} N={n}", C, want)))
        # Every case of one size is sampled round-robin in one loop, so the ratios below compare
        # the same minute of a (noisy, shared) machine.
        slow = n >= 1024 or (software and n >= 256)
        rounds = 3 if args.quick else (3 if slow else 7)
        target = 0.0 if slow else (0.01 if args.quick else 0.05)
        times, _ = time_interleaved([lambda fn=fn: fn(A, B) for _, _, fn in cases], rounds, target)
        seed_t = times[0] if cases and cases[0][0].startswith("seed") else None
        for (label, name, fn), (first, ok), t in zip(cases, firsts, times):
            ratio = t / seed_t if seed_t else None
            rows.append([label, name, n, us(first), us(t), f"{ratio:.2f}x" if ratio else "-", "ok" if ok else "WRONG"])
            RESULTS["seed"].append({"case": label, "device_name": name, "n": n, "first_call_s": first,
                                    "per_call_s": t, "over_seed": ratio, "samples": rounds, "correct": ok})
            # Issue 16: on the seed's own device, vgpu's OpenGL and Vulkan N=16 round trip <= the seed's.
            if n == 16 and ratio and software and label.startswith("vgpu ") and not label.startswith("vgpu cpu"):
                verdict = "met" if ratio <= 1.0 else "NOT met"
                print(f"N=16 {label} / seed moderngl: {ratio:.2f}x (goal <= 1.0x: {verdict})")
    table(["case", "device", "N", "first call", "per call", "vs seed", "result"], rows)
    print(f"seed report: {seed.report()}")
    seed.release()


def torch_round_trip():
    """Returns (fn(A, B) -> numpy C through torch's CUDA device, description), or (None, why not)."""
    try:
        import torch
    except ImportError as e:
        return None, f"torch not importable ({e})"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} has no CUDA device"
    # fp32 as vgpu computes it: TF32 would be a different (less precise) product.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def fn(A, B):
        # The caller's pageable arrays both ways, as vgpu gets them: .cpu() synchronises.
        return (torch.from_numpy(A).cuda() @ torch.from_numpy(B).cuda()).cpu().numpy()

    return fn, f"torch {torch.__version__} on {torch.cuda.get_device_name(0)} (pageable copies, TF32 off)"


def part_large(args, devices):
    """Part 4: large matmul round trips on every GPU device beside torch's CUDA round trip."""
    if not args.large_sizes:
        return
    print(f"\n## 4. Large round trips (host A, B -> host C) at N={', '.join(map(str, args.large_sizes))} vs torch "
          "(per-call median, ms, sampled round-robin; goal <= 1.0x torch)")
    torch_fn, about = torch_round_trip()
    print(f"reference: {about}")
    if torch_fn is None:
        note(f"part 4 has no reference: {about}; vgpu's times are printed alone")
    gpus = [(d, name, t) for d, name, t in devices if not d.startswith("cpu:")]
    rows = []
    for n in args.large_sizes:
        A, B = inputs(n, 4000 + n)
        want = A.astype(np.float64) @ B
        cases = []
        if torch_fn is not None:
            cases.append(("torch CUDA", torch_fn))
        for dev_id, name, dtype in gpus:
            if dtype in SOFTWARE_TYPES:
                note(f"{dev_id} ({name}) skipped at N={n} in part 4 (software GPU: seconds per call)")
                continue
            try:
                cases.append((f"vgpu {dev_id}", vgpu.Cache(dev_id).matmul))
                if dev_id.startswith("cuda:"):
                    # The same call on registered memory: vgpu.asarray(copy=False) keeps A, B and
                    # the result page-locked while the arrays live, so the copies DMA from and to
                    # numpy's memory directly, without the staging copy.
                    cache, out = vgpu.Cache(dev_id), np.empty((n, n), np.float32)
                    keep = [vgpu.asarray(x, device=dev_id, copy=False) for x in (A, B, out)]

                    def pinned(a, b, cache=cache, out=out, keep=keep):
                        return cache.matmul(a, b, out=out)
                    cases.append((f"vgpu {dev_id} (registered memory)", pinned))
            except vgpu.Error as e:
                RESULTS["errors"].append(f"part 4: {dev_id}: {e}")
        if not cases:
            continue
        oks = [check(f"{label} N={n}", fn(A, B), want) for label, fn in cases]
        rounds = 3 if n >= 4096 else 5
        times, _ = time_interleaved([lambda fn=fn: fn(A, B) for _, fn in cases], rounds, 0.05)
        ref_t = times[0] if torch_fn is not None else None
        for (label, _), ok, t in zip(cases, oks, times):
            ratio = t / ref_t if ref_t else None
            verdict = "" if ratio is None or label.startswith("torch") else (" met" if ratio <= 1.0 else " NOT met")
            rows.append([label, n, f"{t * 1e3:,.3f}", f"{ratio:.2f}x{verdict}" if ratio else "-", "ok" if ok else "WRONG"])
            RESULTS["large"].append({"case": label, "n": n, "per_call_s": t, "over_torch": ratio, "samples": rounds,
                                     "correct": ok})
    if rows:
        table(["case", "N", "per call (ms)", "vs torch", "result"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few samples at N=16/64 (the ctest smoke test)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--ref", metavar="PATH", help="the vgpu-bench-python-ref binary (default: found next to the build)")
    ap.add_argument("--sizes", type=int, nargs="+", help="part 2 sizes (default 256 1024; --quick: 64)")
    ap.add_argument("--seed-sizes", type=int, nargs="+", help="part 3 sizes (default 16 256 1024; --quick: 16 64)")
    ap.add_argument("--software-max-n", type=int, default=256,
                    help="largest N run on software GPUs (llvmpipe, lavapipe; default 256)")
    ap.add_argument("--no-seed", action="store_true", help="skip part 3 (the moderngl reference)")
    ap.add_argument("--large-sizes", type=int, nargs="+",
                    help="part 4 sizes, the large round trips against torch (default 1024 2048 4096; --quick: none)")
    args = ap.parse_args()
    args.sizes = args.sizes or ([64] if args.quick else [256, 1024])
    args.seed_sizes = args.seed_sizes or ([16, 64] if args.quick else [16, 256, 1024])
    args.large_sizes = args.large_sizes if args.large_sizes is not None else ([] if args.quick else [1024, 2048, 4096])

    missing = [n for n in ("Cache", "devices") if not hasattr(vgpu, n)]
    if missing:  # a build of the module without that part of the surface (exit 77: ctest's skip)
        print(f"python_overhead.py: SKIP: this vgpu module has no {', '.join(missing)}")
        return 77
    m = machine()
    RESULTS["machine"] = m
    print(f"# vgpu Python overhead — {m['cpu']}, {m['cores']} cores, load {m['load']}, host {m['host']}")
    print(f"# Python {m['python']} ({sys.executable}), numpy {m['numpy']}, vgpu {m['vgpu']}"
          f"{' — QUICK run (smoke test: few samples, small sizes)' if args.quick else ''}")
    ref = find_ref(args.ref)
    print(f"# C++ side: {ref or 'not found'}")
    devices = device_list()
    print(f"# devices: {', '.join(f'{d} ({n}, {t})' for d, n, t in devices)}")
    RESULTS["devices"] = [{"id": d, "name": n, "type": t} for d, n, t in devices]
    t0 = time.perf_counter()
    part_overhead(args, ref)
    part_sizes(args, ref, devices)
    if args.no_seed:
        note("the seed reference is skipped (--no-seed)")
    else:
        part_seed(args, devices)
    part_large(args, devices)
    RESULTS["seconds"] = time.perf_counter() - t0
    print(f"\n{len(RESULTS['errors'])} error(s); {RESULTS['seconds']:.1f} s")
    for e in RESULTS["errors"]:
        print(f"  error: {e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(RESULTS, f, indent=1)
    return 1 if RESULTS["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
