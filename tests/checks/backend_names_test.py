#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a backend's name is hard-coded outside the places that own backend names, and when
docs/adding-a-backend.md's list of what a new backend touches drifts from this test's.

Usage: backend_names_test.py <repository root>

The backends' names come from the registry (core/runtime/device/registry.cpp, kRegistry) and the
base name table (core/base/src/types.cpp, kOwnNames, with BackendKind's constants in
core/base/include/vgpu/types.hpp); everything else asks them (vgpu::backend_names(),
to_string(BackendKind)). In the code outside those three files, the backend
folders, tests/ and bench/, the check reports, in C++ and Python:
  * a string literal that lists two or more backend names ("cuda, vulkan, opengl, cpu");
    device ids in prose ("e.g. vulkan:0") are examples of the id form, not lists;
  * a string literal that is a backend name or a device id ("cpu", "cpu:0"), i.e. one used as a
    value: such code goes through BackendKind (to_string(BackendKind::cpu));
  * in C++, two or more distinct BackendKind constants in one file: a switch, an if-chain or a
    list over backends. One named kind (BackendKind::cpu, the fallback) is allowed.
Tests and benchmarks are not scanned: they pick backends by name on purpose (conformance.<name>,
BACKEND_CASE(vulkan, ...), vgpu-bench-gpu's CUDA-only measurements).

It also checks that the registry and the name table agree (vgpu's own names in registry order),
that every file the doc's checklist names exists and holds what the doc says for each backend
vgpu has, and that the checklist equals TOUCHES below (so the doc and this test cannot drift)."""
import io
import pathlib
import re
import sys
import tokenize

# Everything a new backend touches: the doc's checklist lists exactly these (in backticks, in the
# first column of its table). "<name>" stands for the backend's name, "<NAME>" for it in capitals.
TOUCHES = {
    "backends/<name>/",                    # the folder: sources and CMakeLists.txt
    "core/runtime/device/registry.cpp",    # one kRegistry entry
    "cmake/VgpuOptions.cmake",             # vgpu_backend_option(<name> ...): the build option
    "cmake/VgpuDependencies.cmake",        # its build-time dependencies, vgpu_resolve_backend
    "docs/adding-a-backend.md",            # this checklist
}

# Not scanned: the owners of the names, and the backends' own folders.
# types.hpp declares BackendKind's constants for vgpu's own four (ids 0-3, the order of
# kOwnNames in types.cpp).
OWNERS = {"core/runtime/device/registry.cpp", "core/base/src/types.cpp", "core/base/include/vgpu/types.hpp"}
SCANNED = ("core", "cache", "mpi", "python", "tools")

# Justified hard-coded uses: (file, the literal or token) -> why. Keep each one explained.
ALLOWED = {
    # Dialects, not backends: "cuda" and "cpu" are also the names of two source languages
    # (CUDA C, a C++ callable); a kernel's dialect is not the backend that runs it.
    ("core/base/include/vgpu/kernel_source.hpp", '"cuda"'): "the CUDA C dialect's name (dialect::cuda)",
    ("core/base/include/vgpu/kernel_source.hpp", '"cpu"'): "the C++-callable dialect's name (dialect::cpu)",
    ("python/src/kernels.cpp", '"cuda"'): "the cuda= keyword (CUDA C source) of PersistentKernel",
    ("python/src/kernels.cpp", '"cpu"'): "the cpu= keyword (a Python callable) of PersistentKernel",
    ("python/src/queue.cpp", '"cuda"'): "the cuda= keyword (CUDA C source) of QueueKernel",
    ("python/src/queue.cpp", '"cpu"'): "the cpu= keyword (a Python callable) of QueueKernel",
    ("python/src/kernel_source.cpp", '"cuda"'): "names the cuda= keyword in its type error",
    # DeviceType's name "cpu" (DeviceInfo.type), which is spelled like the CPU backend.
    ("python/examples/mpi_matmul.py", '"cpu"'): "DeviceInfo.type == \"cpu\": a device type, not the backend",
    # The Python benches' machine record ({"cpu": the processor, ...}), which the plots read.
    ("tools/plot_benchmarks.py", '"cpu"'): "the machine record's processor field, not a backend",
}

CPP = {".cpp", ".hpp", ".h", ".cc", ".in"}


def registry(root):
    """The registry's (kind, name, option) entries, in its order; an entry's kind is the one its
    name makes (BackendKind::named), whose constant for vgpu's own backends is spelled as the name."""
    text = (root / "core/runtime/device/registry.cpp").read_text()
    body = text.split("kRegistry[] = {", 1)[1].split("};", 1)[0]
    return [(name, name, option) for name, option in re.findall(r'\{"([^"]+)",\s*"([^"]+)"', body)]


def cpp_tokens(text):
    """Yields ('str', literal) and ('code', text) pieces of C++ source, comments dropped."""
    i, n, code = 0, len(text), []
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif c == "R" and text.startswith('R"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_ = text.find("(", i + 2)
            delim = text[i + 2:open_]
            end = text.find(")" + delim + '"', open_)
            end = n if end < 0 else end
            yield "code", "".join(code)
            code = []
            yield "str", text[open_ + 1:end]
            i = end + len(delim) + 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            yield "code", "".join(code)
            code = []
            yield "str", text[i + 1:j]
            i = j + 1
        elif c == "'" and not (i and text[i - 1].isalnum()):  # a char literal, not a digit separator
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            code.append(c)
            i += 1
    yield "code", "".join(code)


def py_strings(text):
    """Yields the string literals of Python source (their contents, quotes stripped)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                s = tok.string
                s = s.lstrip("rbfuRBFU")
                q = s[:3] if s[:3] in ('"""', "'''") else s[0]
                yield s[len(q):-len(q)]
    except (tokenize.TokenError, IndentationError):
        return


def literal_problems(literal, names):
    """What is wrong with one string literal's contents (None when nothing)."""
    value_form = re.compile(r"(%s)(:\d+)?" % "|".join(map(re.escape, names)))
    if value_form.fullmatch(literal):
        return f'"{literal}" names a backend as a value (go through BackendKind / to_string)'
    listed = set()
    # "cuda=" and "cpu=" are keyword arguments naming a dialect, not backends.
    for m in re.finditer(r"(?<![\w.-])(%s)(?![\w=-])(:\d)?" % "|".join(map(re.escape, names)), literal):
        if not m.group(2):  # "vulkan:0" is an example id, not an item of a list
            listed.add(m.group(1))
    if len(listed) >= 2 and not re.search(r"\b(glsl|spirv)\b", literal):  # a dialect list names glsl/spirv
        return f'"{literal}" lists backends ({", ".join(sorted(listed))}); build it from vgpu::backend_names()'
    return None


def scan(root, names, kinds):
    problems = []
    files = [p for d in SCANNED for p in sorted((root / d).rglob("*")) if p.is_file()]
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel in OWNERS or path.suffix not in CPP | {".py"}:
            continue
        text = path.read_text(errors="replace")
        literals, code = [], []
        if path.suffix == ".py":
            literals = list(py_strings(text))
        else:
            for kind, piece in cpp_tokens(text):
                (literals if kind == "str" else code).append(piece)
        for lit in literals:
            why = literal_problems(lit, names)
            if why and (rel, f'"{lit}"') not in ALLOWED:
                problems.append(f"{rel}: {why}")
        used = sorted(set(re.findall(r"\bBackendKind::(\w+)", " ".join(code))) & set(kinds))
        if len(used) >= 2:
            problems.append(f"{rel}: switches on or lists backends (BackendKind::{', BackendKind::'.join(used)}); "
                            "ask the registry (vgpu::backend_names(), Runtime::backends()) instead")
    return problems


def doc_checklist(root):
    """The places docs/adding-a-backend.md's checklist names (first backticked text of each row)."""
    doc = (root / "docs/adding-a-backend.md").read_text()
    section = doc.split("## Checklist", 1)[1].split("\n## ", 1)[0]
    places = set()
    for row in re.findall(r"^\|[^|]*\|([^|]*)\|", section, re.M):
        places |= set(re.findall(r"`([^`]+)`", row))
    return places


def check_touches(root, entries):
    """Every place of TOUCHES exists and holds, for each of vgpu's GPU backends, what the doc says."""
    problems = []
    gpu = [(kind, name, option) for kind, name, option in entries if option.startswith("VGPU_WITH_")]
    texts = {}
    for place in sorted(TOUCHES):
        if "<name>" in place:
            for _, name, _ in gpu:
                if not (root / place.replace("<name>", name)).is_dir():
                    problems.append(f"{place.replace('<name>', name)} is missing (the registry has {name})")
        elif not (root / place).is_file():
            problems.append(f"{place} (in the checklist) does not exist")
        else:
            texts[place] = (root / place).read_text()
    for _, name, option in gpu:
        want = {
            "cmake/VgpuOptions.cmake": rf"vgpu_backend_option\(\s*{name}\b",
            "cmake/VgpuDependencies.cmake": rf"vgpu_resolve_backend\(\s*{option}\s+backends/{name}\b",
        }
        for place, pattern in want.items():
            if place in texts and not re.search(pattern, texts[place]):
                problems.append(f"{place} has no {pattern!r} for backend {name} (docs/adding-a-backend.md says it does)")
        if option != f"VGPU_WITH_{name.upper()}":
            problems.append(f"registry entry {name}: option {option} is not VGPU_WITH_{name.upper()}")
    # The build files that add the backends, define the registry's VGPU_WITH_* and add the
    # per-backend tests (conformance.<name>, ...) name none of them: they loop over VGPU_BACKENDS.
    # (The top CMakeLists.txt and cmake/ may name VGPU_WITH_VULKAN/OPENGL: the shader layer and
    # the GLSL compiler are those backends' dependencies, which a new backend need not touch.)
    for place in ("backends/CMakeLists.txt", "core/CMakeLists.txt"):
        text = re.sub(r"#.*", "", (root / place).read_text())
        for _, name, option in gpu:
            if re.search(rf"\b{option}\b|add_subdirectory\(\s*{name}\s*\)", text):
                problems.append(f"{place} names backend {name} ({option}); loop over VGPU_BACKENDS instead")
    tests = re.sub(r"#.*", "", (root / "tests/CMakeLists.txt").read_text())
    for quoted in re.findall(r'"([^"\n]*)"', tests):  # a CMake list of two backends or more
        listed = [item for item in quoted.split(";") if item in {n for _, n, _ in gpu}]
        if len(listed) >= 2:
            problems.append(f'tests/CMakeLists.txt lists backends "{quoted}"; use ${{VGPU_BACKENDS}}')
    for _, name, option in gpu:
        if re.search(rf"-D{option}=", tests):
            problems.append(f"tests/CMakeLists.txt sets {option} for a build; loop over VGPU_BACKENDS instead")
    return problems


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    entries = registry(root)
    if not entries:
        print("FAIL: found no kRegistry entries in core/runtime/device/registry.cpp")
        return 1
    kinds = [k for k, _, _ in entries]
    names = [n for _, n, _ in entries]
    problems = []
    types = (root / "core/base/src/types.cpp").read_text()
    own = re.search(r"kOwnNames\[\]\s*=\s*\{([^}]*)\}", types)
    own_names = re.findall(r'"([^"]+)"', own.group(1)) if own else []
    if own_names != [n for n in names if n in own_names] or not own_names:
        problems.append(f"core/base/src/types.cpp kOwnNames {own_names} is not in the registry's order {names}")
    problems += scan(root, names, kinds)
    doc = doc_checklist(root)
    for place in sorted(doc - TOUCHES):
        problems.append(f"docs/adding-a-backend.md's checklist names {place}, which this test does not know")
    for place in sorted(TOUCHES - doc):
        problems.append(f"docs/adding-a-backend.md's checklist does not name {place}")
    problems += check_touches(root, entries)
    for p in problems:
        print("FAIL:", p)
    print(f"{len(names)} backends in the registry ({', '.join(names)}), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
