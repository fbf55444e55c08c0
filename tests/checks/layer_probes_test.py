#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Proves that a wrong-way include does not compile (issue 30). For each layer of libvgpu it
takes the exact compile command of one of the layer's own sources from compile_commands.json
(its include directories, defines and flags) and compiles two kinds of probe file with it:

  * for each layer the layer may not use (a higher one, or another backend), a file that
    includes one of that layer's headers: the compiler must fail, saying it cannot find that
    header (failing for another reason would prove nothing);
  * one file that includes a header of each layer it may use: it must compile, so a probe
    command that could never succeed cannot pass the test.

Usage: layer_probes_test.py <repository root> <build directory>. A layer not built here (the
CUDA backend without the toolkit) is reported as skipped; no layer compiled at all fails."""
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile

# One public header of each layer, and the folder whose compiled sources belong to it.
HEADER = {
    "base": "vgpu/error.hpp",
    "cache": "vgpu/cache/disk_store.hpp",
    "backend_api": "vgpu/backend/device_impl.hpp",
    "kernels": "vgpu/kernels/kernel_abi.hpp",
    "shader": "vgpu/shader/shader_tools.hpp",
    "core": "vgpu/runtime.hpp",
    # Backends have no public header: a private one stands for each, so that one backend
    # including another's is caught too.
    "backend_cpu": "cpu_device.hpp",
    "backend_vulkan": "vk_device.hpp",
    "backend_opengl": "gl_device.hpp",
    "backend_cuda": "cuda_device.hpp",
}
FOLDER = {
    "base": "core/base/",
    "cache": "cache/",
    "backend_api": "core/backend_api/",
    "kernels": "core/kernels/",
    "shader": "core/shader/",
    "core": "core/runtime/",
    "backend_cpu": "fallback/cpu/",
    "backend_vulkan": "backends/vulkan/",
    "backend_opengl": "backends/opengl/",
    "backend_cuda": "backends/cuda/",
}
# What each layer may include (docs/architecture.md, "Layers and targets"), itself included.
BELOW = {
    "base": {"base"},
    "cache": {"base", "cache"},
    "backend_api": {"base", "cache", "backend_api"},
    "kernels": {"base", "cache", "backend_api", "kernels"},
    "shader": {"base", "cache", "backend_api", "shader"},
    # The runtime reaches the backends only through vgpu/backend/registry.hpp, and needs no
    # SPIR-V toolchain of its own: the shader layer is the GPU backends' alone.
    "core": {"base", "cache", "backend_api", "kernels", "core"},
}
for b in ("backend_cpu", "backend_vulkan", "backend_opengl", "backend_cuda"):
    BELOW[b] = {"base", "cache", "backend_api", "kernels", b}
for b in ("backend_vulkan", "backend_opengl"):
    BELOW[b].add("shader")


def probe_command(entry, probe, out):
    """entry's compile command with its source replaced by probe, checking syntax only."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD") or a == entry["file"]:
            continue
        kept.append(a)
    return kept + ["-fsyntax-only", "-x", "c++", str(probe)]


def compile_probe(entry, text, workdir):
    probe = workdir / "probe.cpp"
    probe.write_text(text)
    r = subprocess.run(probe_command(entry, probe, workdir), cwd=entry["directory"],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    build = pathlib.Path(sys.argv[2]).resolve()
    entries = json.loads((build / "compile_commands.json").read_text())
    failures, checked = [], 0
    with tempfile.TemporaryDirectory(prefix="vgpu-layer-probe-") as tmp:
        workdir = pathlib.Path(tmp)
        for layer, folder in FOLDER.items():
            # A source of the layer's own target (its objects go to CMakeFiles/vgpu_<layer>.dir):
            # a host tool compiling one of its files has other include directories.
            mine = [e for e in entries if pathlib.Path(e["file"]).resolve().as_posix().startswith(
                (root / folder).as_posix() + "/") and e["file"].endswith(".cpp")
                and f"/vgpu_{layer}.dir/" in e.get("output", e.get("command", ""))]
            if not mine:
                print(f"{layer}: skipped (no source of {folder} is compiled in this build)")
                continue
            entry = mine[0]
            allowed = [HEADER[l] for l in sorted(BELOW[layer]) if not l.startswith("backend_") or l == layer]
            rc, out = compile_probe(entry, "".join(f'#include "{h}"\n' for h in allowed), workdir)
            checked += 1
            if rc != 0:
                failures.append(f"{layer}: its own and lower layers' headers {allowed} do not compile "
                                f"with the command of {entry['file']}:\n{out[-2000:]}")
                continue
            for other, header in HEADER.items():
                if other in BELOW[layer]:
                    continue
                rc, out = compile_probe(entry, f'#include "{header}"\n', workdir)
                checked += 1
                name = pathlib.PurePosixPath(header).name
                if rc == 0:
                    failures.append(f"{layer}: including \"{header}\" (layer {other}) compiles; a wrong-way "
                                    f"include must not (fix the include directories of vgpu_{layer})")
                elif "No such file" not in out or name not in out:
                    failures.append(f"{layer}: including \"{header}\" failed, but not because the header is "
                                    f"out of reach:\n{out[-1500:]}")
            print(f"{layer}: {len(allowed)} allowed header(s) compile, "
                  f"{len(HEADER) - len(BELOW[layer])} wrong-way include(s) do not ({entry['file']})")
    for f in failures:
        print("FAILED " + f)
    if checked == 0:
        print("no layer was compiled in this build: nothing proven. Fix: build the tree first.")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
