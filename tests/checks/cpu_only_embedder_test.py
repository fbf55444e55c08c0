#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cpu_only_embedder_test.py LIBVGPU EMBEDDER — a CPU-only application ships libvgpu alone.

1. libvgpu.so needs nothing at load time but oneTBB, xxHash and the C/C++ runtime (readelf's
   NEEDED list): no GLSL compiler, SPIRV-Tools or SPIRV-Cross.
2. With libvgpu.so copied alone into an empty folder (no libvgpu_shader_toolchain.so beside
   it), the embedder (tests/checks/cpu_only_embedder.cpp) starts, multiplies on cpu:0 correctly,
   and the Vulkan and OpenGL backends, when built, say the SPIR-V toolchain is missing.
3. With the toolchain copied beside that libvgpu, it is found there: no backend names it as
   missing any more.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The sanitizers' runtimes too: a VGPU_SANITIZE build (tools/dev.sh sanitize) instruments libvgpu.
# cpuinfo: the platform layer's CPU features and caches (docs/embedding.md, "What to ship").
ALLOWED = re.compile(r"^(libtbb\.so\.\d+|libxxhash\.so\.\d+|libcpuinfo\.so\.\d+|libstdc\+\+\.so\.6|libm\.so\.6|libgcc_s\.so\.1|"
                     r"libc\.so\.6|ld-linux[-\w.]*\.so\.\d+|lib[almt]san\.so\.\d+|libubsan\.so\.\d+)$")
TOOLCHAIN = "libvgpu_shader_toolchain.so"


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def run(embedder, libdir, cache):
    env = dict(os.environ, LD_LIBRARY_PATH=libdir, VGPU_CACHE_DIR=cache)
    env.pop("LD_PRELOAD", None)
    return subprocess.run([embedder], env=env, capture_output=True, text=True, timeout=300)


def main():
    libvgpu, embedder = sys.argv[1], sys.argv[2]
    failures = []
    extra = [n for n in needed(libvgpu) if not ALLOWED.match(n)]
    if extra:
        failures.append(f"libvgpu.so needs {extra} at load time; only oneTBB, xxHash, cpuinfo and the C/C++ runtime may be")
    real = os.path.realpath(libvgpu)
    toolchain = os.path.join(os.path.dirname(real), TOOLCHAIN)
    with tempfile.TemporaryDirectory() as tmp:
        libdir = os.path.join(tmp, "app")
        os.makedirs(libdir)
        shutil.copy(real, os.path.join(libdir, "libvgpu.so.0"))
        r = run(embedder, libdir, os.path.join(tmp, "cache"))
        print(r.stdout + r.stderr)
        if r.returncode != 0:
            failures.append(f"without the toolchain the embedder exited {r.returncode}")
        if "matmul on cpu:0: max error" not in r.stdout:
            failures.append("the cpu:0 product was not printed")
        for kind in ("vulkan", "opengl"):
            line = next((l for l in r.stdout.splitlines() if l.startswith(f"backend {kind} ")), None)
            if line is None or "not compiled" in line:
                continue
            if "unavailable" not in line or TOOLCHAIN not in line:
                failures.append(f"without the toolchain, {kind} does not say it is missing: {line!r}")
        if os.path.exists(toolchain):
            shutil.copy(toolchain, os.path.join(libdir, TOOLCHAIN))
            r = run(embedder, libdir, os.path.join(tmp, "cache2"))
            print(r.stdout + r.stderr)
            if r.returncode != 0:
                failures.append(f"with the toolchain beside libvgpu the embedder exited {r.returncode}")
            if TOOLCHAIN in r.stdout:
                failures.append("the toolchain beside libvgpu was not found")
        else:
            print(f"(no {TOOLCHAIN} in this build: no Vulkan or OpenGL backend)")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
