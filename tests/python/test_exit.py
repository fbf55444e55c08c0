# SPDX-License-Identifier: Apache-2.0
"""An interpreter ends safely and silently whatever vgpu's background calibration is doing
(issue 29): each case runs the design's short flows (100 Cache matmuls at N=16, a
KernelDatabase at N=16 and N=32, an error case, vgpu.devices()) in a fresh interpreter and
asserts exit status 0, its result line and nothing on stderr. Before the fix the interpreter
printed its results and then died with SIGSEGV at exit (lavapipe compiling in LLVM while LLVM's
exit-time destructors ran), or printed a warning about the cancelled work.

- Held: the test-only hooks library (tests/hooks, libvgpu_testing_hooks.so, named by
  VGPU_TESTING_HOOKS; libvgpu itself has no test hooks) is loaded with RTLD_GLOBAL before
  `import vgpu`, so libvgpu.so's weak hold point binds to it; it holds the background
  calibration right before its first call on one device; the script ends once it is held, so
  the interpreter always exits with that driver call in flight.
- Short runs: the flows as they are, per backend set, with empty caches, then warm after a run
  that settled.
The children's Mesa shader cache is off, so every driver compile is real (a fresh machine)."""
import os
import subprocess
import sys

import pytest

import vgpu

SCRIPT = r'''
import ctypes, os, sys, time
import numpy as np
mode, hold, settle = sys.argv[1], sys.argv[2], len(sys.argv) > 3
if hold != "-":  # before vgpu loads libvgpu.so, whose weak hold point then binds to the hooks
    hooks = ctypes.CDLL(os.environ["VGPU_TESTING_HOOKS"], mode=ctypes.RTLD_GLOBAL)
    hooks.vgpu_testing_hold_background_calibration(hold.encode())
import vgpu
A = np.ones((16, 16), np.float32)
cache = vgpu.Cache()
for _ in range(100):
    C = cache.matmul(A, A)
assert (C == 16).all() and cache.dispatches == 100
db = vgpu.KernelDatabase()
k16 = db.get("matmul", 16)
k32 = db.get("matmul", 32)
B = np.ones((32, 32), np.float32)
assert (k16(A, A) == 16).all() and (k32(B, B) == 32).all()
try:
    cache.matmul(np.ones((3, 4), np.float32), np.ones((5, 6), np.float32))
    sys.exit(3)
except vgpu.InvalidArgument:
    pass
n = len(vgpu.devices())
if settle:
    assert vgpu.settle()
held = 0
if hold != "-":
    until = time.monotonic() + 120
    while not hooks.vgpu_testing_background_calibration_held():
        if time.monotonic() > until:
            print("held=0 result=no-hold")
            sys.exit(5)
        time.sleep(0.001)
    held = 1
print(f"held={held} devices={n} result=ok", flush=True)
if mode == "del":  # the objects go before the interpreter ends, with the calibration running
    del cache, db, k16, k32
'''

RUNS = 5  # per backend set and cache state


def gpu_backends():
    """The GPU backends available here, each with VGPU_BACKEND's name."""
    return [s.name for s in vgpu.backends() if s.name != "cpu" and s.available]


def gpu_backend_or_skip(name):
    for s in vgpu.backends():
        if s.name == name and not s.available:
            pytest.skip(f"{name}: {s.reason}")
    return name


def run(tmp_path, name, backends, *args):
    """Runs the flows in a fresh interpreter with its own cache directory (tmp_path/name)."""
    script = tmp_path / "flows.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VGPU_DEVICE", "VGPU_BACKEND", "VGPU_BACKGROUND", "VGPU_LOG", "VGPU_CACHE_DISABLE",
                        "VGPU_VULKAN_VALIDATION")}
    env["MESA_SHADER_CACHE_DISABLE"] = "true"
    env["VGPU_CACHE_DIR"] = str(tmp_path / name)
    if backends:
        env["VGPU_BACKEND"] = backends
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300)


def check_clean(r, what):
    assert (r.returncode, r.stderr) == (0, ""), f"{what}\nstdout:\n{r.stdout}stderr:\n{r.stderr}"
    assert "result=ok" in r.stdout, what


@pytest.mark.parametrize("backend", ["cpu", "vulkan", "opengl", "cuda"])
def test_interpreter_ends_cleanly_with_a_calibration_call_in_flight(tmp_path, backend):
    if not os.environ.get("VGPU_TESTING_HOOKS"):
        pytest.skip("VGPU_TESTING_HOOKS does not name the test hooks library (ctest sets it: "
                    "build/lib/testing/libvgpu_testing_hooks.so)")
    # The CPU with every backend on (alone it has nothing to time); each GPU beside the CPU.
    backends = "" if backend == "cpu" else "cpu," + gpu_backend_or_skip(backend)
    for mode in ("end", "del"):
        r = run(tmp_path, mode, backends, mode, backend + ":0")
        check_clean(r, f"{mode}, held on {backend}:0")
        assert "held=1" in r.stdout


@pytest.mark.parametrize("backends", ["cpu", "cpu,vulkan", "cpu,opengl", "cpu,cuda", ""])
def test_short_runs_end_cleanly_with_an_empty_and_a_warm_cache(tmp_path, backends):
    gpus = gpu_backends()
    if backends == "" and len(gpus) < 2:
        pytest.skip("fewer than two GPU backends here: the sets with one are the other cases")
    for name in backends.split(",")[1:]:
        gpu_backend_or_skip(name)
    for i in range(RUNS):
        mode = ("end", "del")[i % 2]
        check_clean(run(tmp_path, f"empty{i}", backends, mode, "-"), f"empty cache, {mode}")
    check_clean(run(tmp_path, "warm", backends, "end", "-", "settle"), "the run that settles")
    for i in range(RUNS):
        mode = ("end", "del")[i % 2]
        check_clean(run(tmp_path, "warm", backends, mode, "-"), f"warm cache, {mode}")
