#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that configuration has one home: no source outside core/base/src/config.cpp reads a
VGPU_* variable of the library with getenv, every variable config.cpp knows is in the README's
environment table, and every VGPU_* variable the README table lists is known to config.cpp.

Usage: config_vars_test.py <repository root>
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
config = (root / "core/base/src/config.cpp").read_text()
known = set(re.findall(r'\{"(VGPU_[A-Z0-9_]+)",', config))
assert known, "found no variables in core/base/src/config.cpp"

readme = (root / "README.md").read_text()
section = readme.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
table = set()
for row in re.findall(r"^\|([^|]*)\|", section, re.M):  # the first cell of each row
    table |= set(re.findall(r"`(VGPU_[A-Z0-9_]+)`", row))
problems = []
for name in sorted(known - table):
    problems.append(f"README.md's environment table does not list {name} (known to core/base/src/config.cpp)")
for name in sorted(table - known):
    problems.append(f"README.md lists {name}, which core/base/src/config.cpp does not know")

# Library code reads VGPU_* variables only through vgpu::config(); tests, benchmarks and
# dev.sh read their own (listed in config.cpp so that they are not reported as unknown).
getenv = re.compile(r'getenv\(\s*"(VGPU_[A-Z0-9_]+)"')
for folder in ("core", "cache", "backends", "fallback", "tools"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".cc") or path.name == "config.cpp":
            continue
        for name in getenv.findall(path.read_text(errors="replace")):
            problems.append(f"{path.relative_to(root)} reads {name} with getenv; use vgpu::config() instead")
for folder in ("tests", "bench"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".py", ".sh"):
            continue
        for name in getenv.findall(path.read_text(errors="replace")):
            if name not in known:
                problems.append(f"{path.relative_to(root)} reads {name}, which core/base/src/config.cpp does not list")

for p in problems:
    print("FAIL:", p)
print(f"{len(known)} variables known, {len(table)} in the README table, {len(problems)} problems")
sys.exit(1 if problems else 0)
