#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks (or, with --fix, applies) the repository's C++ formatting: every tracked .cpp, .hpp,
.h, .cu and .cuh file must be what clang-format-14 makes of it under the root's .clang-format.
The ctest test format.check runs the check, so CI fails on an unformatted file.

Usage: format_check.py <repository root> [--fix]

Exit 0: all formatted (or fixed); 1: files differ (each listed, with the command that fixes
them); 77: no clang-format-14 on PATH (tools/dev.sh installs it: the test is then skipped, with
this reason, in a build made without dev.sh). Third-party shaders under tests/shaders are the
corpus run as their authors wrote them, and are left alone."""
import pathlib
import shutil
import subprocess
import sys

SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh")
LEFT_ALONE = ("tests/shaders/",)


def tracked_sources(root):
    """The tracked C/C++/CUDA files under root, relative paths, corpus excluded."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
    names = [n for n in out.decode().split("\0") if n]
    return [n for n in names if n.endswith(SUFFIXES) and not n.startswith(LEFT_ALONE)]


def main():
    if len(sys.argv) < 2:
        print("usage: format_check.py <repository root> [--fix]")
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    fix = "--fix" in sys.argv[2:]
    tool = shutil.which("clang-format-14")
    if tool is None:
        print("format_check: clang-format-14 is not installed, so the formatting was not checked. "
              "Fix: apt-get install clang-format-14 (tools/dev.sh installs it).")
        return 77
    files = tracked_sources(root)
    if not files:
        print("format_check: no tracked C++ file found under " + str(root) +
              ". Fix: run it on a git checkout of vgpu.")
        return 2
    differ = []
    # In batches: one clang-format process per file would take a minute on a 2-core machine.
    for i in range(0, len(files), 64):
        batch = files[i:i + 64]
        if fix:
            subprocess.run([tool, "-i", "--style=file"] + batch, cwd=root, check=True)
            continue
        r = subprocess.run([tool, "--dry-run", "--style=file"] + batch, cwd=root, capture_output=True, text=True)
        for line in r.stderr.splitlines():
            # "<file>:<line>:<col>: warning: code should be clang-formatted [-Wclang-format-violations]"
            if "clang-format-violations" in line:
                name = line.split(":", 1)[0]
                if name not in differ:
                    differ.append(name)
    if fix:
        print(f"format_check: formatted {len(files)} files")
        return 0
    if differ:
        for name in differ:
            print("not formatted: " + name)
        print(f"{len(differ)} of {len(files)} files differ from clang-format-14's output. "
              "Fix: python3 tools/format_check.py . --fix (or clang-format-14 -i <file>), then commit.")
        return 1
    print(f"format_check: {len(files)} files formatted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
