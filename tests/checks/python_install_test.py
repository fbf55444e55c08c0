# SPDX-License-Identifier: Apache-2.0
"""ctest python.install: `cmake --install` puts a working vgpu package into the Python path of a prefix.

usage: python_install_test.py CMAKE BUILD_DIR PACKAGE_DIR

Installs the build into a temporary prefix, then imports vgpu from <prefix>/PACKAGE_DIR with
PYTHONPATH set to it in a clean environment (no LD_LIBRARY_PATH, no build tree on any path) and
runs one matmul on the CPU device. Checks that the package, its stubs and py.typed came from the
prefix and that the libvgpu the module loaded is the installed one (its RPATH), not the build's.
"""
import os
import subprocess
import sys
import tempfile

cmake, build_dir, package_dir = sys.argv[1:4]
if os.path.isabs(package_dir):
    print(f"SKIP: VGPU_PYTHON_INSTALL_DIR is absolute ({package_dir}): the package does not move with --prefix")
    sys.exit(77)

CHILD = r"""
import os, sys
import numpy as np
import vgpu
prefix = sys.argv[1]
pkg = os.path.dirname(os.path.abspath(vgpu.__file__))
assert pkg.startswith(prefix), f"vgpu imported from {pkg}, not from the prefix {prefix}"
for f in ("__init__.py", "__main__.py", "_vgpu.pyi", "py.typed"):
    assert os.path.isfile(os.path.join(pkg, f)), f"{f} is not installed in {pkg}"
maps = open("/proc/self/maps").read().split()
libs = sorted({p for p in maps if "/libvgpu.so" in p})
assert libs and all(p.startswith(prefix) for p in libs), f"libvgpu loaded from {libs}, not from {prefix}"
if not hasattr(vgpu, "Cache"):  # a module without that part of the surface: ctest reports the skip
    print("SKIP: the installed module imports from the prefix, but has no vgpu.Cache to run a matmul with")
    sys.exit(77)
rng = np.random.default_rng(7)
A = rng.standard_normal((17, 9), dtype=np.float32)
B = rng.standard_normal((9, 5), dtype=np.float32)
C = vgpu.Cache("cpu:0").matmul(A, B)
assert C.dtype == np.float32 and C.shape == (17, 5), (C.dtype, C.shape)
assert np.allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4), "wrong matmul result"
print("installed vgpu", vgpu.__version__, "from", pkg, "with", libs[0], ": matmul ok")
"""

with tempfile.TemporaryDirectory(prefix="vgpu-install-") as tmp:
    prefix = os.path.join(tmp, "prefix")
    r = subprocess.run([cmake, "--install", build_dir, "--prefix", prefix], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cmake --install failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    site = os.path.join(prefix, package_dir)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "PYTHONPATH": site, "PYTHONNOUSERSITE": "1",
           "VGPU_CACHE_DIR": os.path.join(tmp, "cache"), "MESA_SHADER_CACHE_DIR": os.path.join(tmp, "mesa"),
           "VGPU_BACKEND": "cpu"}
    # A sanitizer build's settings (tools/dev.sh sanitize) are how the process runs, not where
    # vgpu comes from: they pass through.
    env.update({k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")})
    r = subprocess.run([sys.executable, "-c", CHILD, os.path.realpath(prefix)], env=env, cwd=tmp,
                       capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode == 77:
        sys.exit(77)
    if r.returncode != 0:
        sys.exit(f"importing the installed vgpu failed ({r.returncode}):\n{r.stderr}")
