#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/checks/plots_test.py — tools/plot_benchmarks.py on benchmark JSON of real runs
(tests/data/plots: vgpu-bench-roundtrip and vgpu-bench-arrays on an H100, vgpu-bench-select
--quick and vgpu-bench-roundtrip --quick with device times (bench-roundtrip_timed.json) on a
2-core build machine) and one file no plotter knows.

    plots_test.py PYTHON WORK_DIR

Every known file must give its PNGs (real PNG files, not empty), the unknown one must be
skipped with a reason, and the run must say what it drew. Exits 77 (a reported skip) when
matplotlib is not importable by PYTHON (Debian: apt-get install python3-matplotlib).
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WANT = ["roundtrip.png", "roundtrip-large.png", "arrays-chain.png", "arrays-stack.png", "selection.png",
        "roundtrip-device-bench-roundtrip_timed.png"]  # the H100 file has no device times: the second file's


def main():
    python, work = sys.argv[1:3]
    if subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode != 0:
        print("skipped: matplotlib is not importable (Fix: apt-get install python3-matplotlib)")
        return 77
    out = os.path.join(work, "img")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([python, os.path.join(ROOT, "tools", "plot_benchmarks.py"), os.path.join(ROOT, "tests", "data",
                                                                                             "plots"), "--out", out],
                       capture_output=True, text=True, timeout=600)
    print(p.stdout + p.stderr)
    if p.returncode != 0:
        raise AssertionError(f"plot_benchmarks.py exited {p.returncode}")
    for name in WANT:
        path = os.path.join(out, name)
        if not os.path.isfile(path):
            raise AssertionError(f"no {name} drawn")
        with open(path, "rb") as f:
            head = f.read(8)
        if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(path) < 10000:
            raise AssertionError(f"{name} is not a PNG of a plot ({os.path.getsize(path)} bytes)")
    if "unknown.json" not in p.stdout or "no plotter" not in p.stdout:
        raise AssertionError("the file no plotter knows was not reported as skipped with a reason")
    print(f"plots: {', '.join(WANT)} drawn; the unknown file skipped with its reason")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main())
