#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every source file the project owns starts with its SPDX licence line.

usage: spdx_check.py <repository root> [--fix]

C, C++, CUDA and GLSL files (and the .cpp.in templates) need `// SPDX-License-Identifier: Apache-2.0`
as their first line; CMake, shell and Python files `# SPDX-License-Identifier: Apache-2.0`, as
the first line or right after a shebang line. The files are git's tracked ones where the root is
a git checkout, else every file under it. --fix inserts the line where it is missing.
"""
import pathlib
import subprocess
import sys

LICENCE = "SPDX-License-Identifier: Apache-2.0"
SLASH = (".cpp", ".hpp", ".h", ".cc", ".c", ".cu", ".cuh", ".comp", ".glsl", ".cpp.in")
HASH = (".cmake", ".cmake.in", ".pc.in", ".sh", ".py", ".pyi")


def comment_for(path: pathlib.Path):
    """The comment leader the file's kind uses, or None for a file the check does not cover."""
    name = path.name
    if name == "CMakeLists.txt" or name.endswith(HASH):
        return "#"
    if name.endswith(SLASH):
        return "//"
    return None


def files(root: pathlib.Path):
    """The files to check: git's tracked ones, or a walk that skips build trees."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        return [root / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (a source tarball): skip build trees (build/, build-*/) and hidden folders.
        return [p for p in root.rglob("*") if p.is_file()
                and not any(part.startswith((".", "build")) for part in p.relative_to(root).parts[:-1])]


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: spdx_check.py <repository root> [--fix]. Fix: pass the repository root.")
        return 2
    root = pathlib.Path(sys.argv[1])
    fix = "--fix" in sys.argv[2:]
    missing = []
    checked = 0
    for path in sorted(files(root)):
        leader = comment_for(path)
        if leader is None or not path.is_file():
            continue
        checked += 1
        lines = path.read_text().splitlines(keepends=True)
        at = 1 if lines and lines[0].startswith("#!") else 0
        want = f"{leader} {LICENCE}\n"
        if len(lines) > at and lines[at] == want:
            continue
        missing.append(path.relative_to(root))
        if fix:
            lines.insert(at, want)
            path.write_text("".join(lines))
    for p in missing:
        print(("fixed: " if fix else "FAIL: ") + f"{p} does not start with '{LICENCE}'"
              + ("" if fix else ". Fix: add it as the first line (after a shebang), or run tools/spdx_check.py . --fix"))
    print(f"{checked} files checked, {len(missing)} without the SPDX line")
    return 0 if fix or not missing else 1


if __name__ == "__main__":
    sys.exit(main())
