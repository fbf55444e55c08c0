#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/checks/stubtest_check.py — mypy's stubtest on the built vgpu package: every name, signature
and property of the stubs (python/vgpu/_vgpu.pyi) against the module as it runs, with only the
allowlisted pybind11 artefacts excused (python/vgpu/stubtest-allowlist.txt says why each).

    stubtest_check.py ALLOWLIST WORK_DIR

Run with the interpreter the module is built for and PYTHONPATH at the built package. Exits 77
(a reported skip) when mypy is not installed (Debian: apt-get install mypy).
"""
import os
import subprocess
import sys


def main():
    allowlist, work = sys.argv[1:3]
    try:
        import mypy.stubtest  # noqa: F401
    except ImportError:
        print("skipped: mypy is not installed for this interpreter (Fix: apt-get install mypy)")
        return 77
    os.makedirs(work, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "vgpu", "--allowlist", allowlist,
                        "--mypy-config-file", os.devnull], cwd=work, capture_output=True, text=True, timeout=600)
    print(p.stdout + p.stderr)
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main())
