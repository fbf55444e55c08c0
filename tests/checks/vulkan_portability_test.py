#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that vgpu's Vulkan instance asks for portability drivers exactly where the loader
offers VK_KHR_portability_enumeration (docs/platforms.md, "Vulkan on every loader").
Usage: vulkan_portability_test.py <vgpu-probe>. The loader's offer is read independently, from
vulkaninfo (Debian: vulkan-tools); exits 77 (a skip, with the reason) without it or without a
Vulkan backend."""
import os
import shutil
import subprocess
import sys


def main():
    probe = sys.argv[1]
    vulkaninfo = shutil.which("vulkaninfo")
    if not vulkaninfo:
        print("SKIP: vulkaninfo not found (install vulkan-tools): nothing to compare the instance with")
        return 77
    info = subprocess.run([vulkaninfo, "--summary"], capture_output=True, text=True, timeout=120)
    if info.returncode != 0:
        print(f"SKIP: vulkaninfo --summary failed ({info.returncode}): no Vulkan loader or driver here")
        return 77
    offered = "VK_KHR_portability_enumeration" in info.stdout
    env = dict(os.environ, VGPU_LOG="debug", VGPU_BACKEND="vulkan")
    run = subprocess.run([probe, "--no-self-test"], capture_output=True, text=True, timeout=120, env=env)
    said = "portability drivers are listed too" in run.stderr
    if "vulkan:0" not in run.stdout:
        print("SKIP: vgpu-probe shows no Vulkan device:\n" + run.stdout + run.stderr)
        return 77
    print(f"loader offers VK_KHR_portability_enumeration: {offered}; vgpu enabled it: {said}")
    if offered != said:
        print("FAIL: vgpu must enable portability enumeration exactly when the loader offers it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
