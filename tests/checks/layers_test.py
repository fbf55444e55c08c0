#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a layer of libvgpu includes a header of a layer above it (docs/architecture.md,
"Layers and targets"), when an include names a path from the repository root, or when a public
header names DeviceImpl. Usage: layers_test.py <repository root>.

The include directories of the layer targets already make most wrong-way includes fail to
compile; this check also catches the ones a quoted include could still reach through the
including file's own folder, and prints every offender at once."""
import pathlib
import re
import sys

# Which layers each layer may include (its own included).
BELOW = {
    "base": {"base"},
    "cache": {"base", "cache"},
    "backend_api": {"base", "cache", "backend_api"},
    "kernels": {"base", "cache", "backend_api", "kernels"},
    "core": {"base", "cache", "backend_api", "kernels", "core"},
    "shader": {"base", "cache", "backend_api", "shader"},
}
for backend in ("backend_cpu", "backend_vulkan", "backend_opengl", "backend_cuda"):
    BELOW[backend] = {"base", "cache", "backend_api", "kernels", backend}
# The GPU-API backends also sit over the shader layer (core/shader: SPIR-V compile, reflect).
for backend in ("backend_vulkan", "backend_opengl"):
    BELOW[backend].add("shader")

# Folders (relative to the root) and the layer their files belong to; the longest match wins.
FOLDERS = {
    "core/base": "base",
    "cache": "cache",
    "core/backend_api": "backend_api",
    "core/kernels": "kernels",
    "core/shader": "shader",
    "core/runtime": "core",
    "fallback/cpu": "backend_cpu",
    "backends/vulkan": "backend_vulkan",
    "backends/opengl": "backend_opengl",
    "backends/cuda": "backend_cuda",
}
# Where a layer's own quoted includes resolve from (its private include directory).
OWN_DIRS = {
    "cache": ["cache/src"],
    "core": ["core/runtime/" + d for d in ("device", "selection", "features", "kernel_cache", "queue", "multi")],
    "shader": ["core/shader/src"],
    "backend_cpu": ["fallback/cpu"],
    "backend_vulkan": ["backends/vulkan"],
    "backend_opengl": ["backends/opengl"],
    "backend_cuda": ["backends/cuda"],
}
# vgpu/<prefix>/... headers and the layer that owns them; other vgpu/*.hpp are base's.
PREFIXES = {"vgpu/cache/": "cache", "vgpu/backend/": "backend_api", "vgpu/kernels/": "kernels",
            "vgpu/shader/": "shader"}
ROOT_DIRS = ("core/", "cache/", "backends/", "fallback/", "tests/", "tools/", "bench/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources_by_target(root):
    """Maps each core/<folder>/... source to its layer, as core/CMakeLists.txt lists them (a
    check that the folders and the targets agree)."""
    text = (root / "core/CMakeLists.txt").read_text()
    layers = {}
    for target, body in re.findall(r"target_sources\(vgpu_(\w+)\s+PRIVATE([^)]*)\)", text):
        for src in body.split():
            layers["core/" + src] = target
    return layers


def layer_of_folder(rel):
    """The layer of rel's folder (the longest match in FOLDERS), or None."""
    best = None
    for folder, layer in FOLDERS.items():
        if rel.startswith(folder + "/") and (best is None or len(folder) > len(best[0])):
            best = (folder, layer)
    return best[1] if best else None


def layer_of(rel, cmake_layers):
    if rel in cmake_layers:
        return cmake_layers[rel]
    if rel.startswith("cmake/") and rel.endswith(".cpp.in"):
        return "kernels"  # the generated L3 tables are compiled into vgpu_kernels
    best = None
    for folder, layer in FOLDERS.items():
        if rel.startswith(folder + "/") and (best is None or len(folder) > len(best[0])):
            best = (folder, layer)
    return best[1] if best else None


# The most source files one folder of the library may hold.
MAX_FOLDER_FILES = 25


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    cmake_layers = sources_by_target(root)
    files = [p for d in ("core", "cache", "backends", "fallback") for p in (root / d).rglob("*")
             if p.suffix in (".hpp", ".cpp", ".h")]
    files += list((root / "cmake").glob("*.cpp.in"))
    problems = []
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        own = layer_of(rel, cmake_layers)
        if own is None:
            continue
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            if inc.startswith(ROOT_DIRS):
                problems.append(f"{rel}: includes \"{inc}\" from the repository root "
                                "(include it through its layer's include directory)")
                continue
            target = None
            for prefix, layer in PREFIXES.items():
                if inc.startswith(prefix):
                    target = layer
            if target is None and inc.startswith("vgpu/") and (root / "core/base/include" / inc).exists():
                target = "base"
            if target is None and inc.startswith("vgpu/") and (root / "core/runtime/include" / inc).exists():
                target = "core"
            if target is None:
                for d in [path.parent.relative_to(root).as_posix()] + OWN_DIRS.get(own, []):
                    if (root / d / inc).exists():
                        target = layer_of(f"{d}/{inc}", cmake_layers)
                        break
            if target is not None and target not in BELOW[own]:
                problems.append(f"{rel} (layer {own}): includes \"{inc}\" of layer {target}")
    for rel, layer in cmake_layers.items():
        if layer_of_folder(rel) != layer:
            problems.append(f"{rel}: built into vgpu_{layer} but kept in the folder of layer {layer_of_folder(rel)}")
    for header in sorted(list((root / "core/base/include/vgpu").glob("*.hpp")) +
                         list((root / "core/runtime/include/vgpu").glob("*.hpp"))):
        if re.search(r"\bDeviceImpl\b", header.read_text()):
            problems.append(f"{header.relative_to(root)}: a public header names DeviceImpl "
                            "(the backend-author interface, core/backend_api)")
    # A folder of sources holds one concept: past ~25 files it holds several (issue 30).
    per_folder = {}
    for path in files:
        if path.suffix in (".cpp", ".hpp", ".h"):
            per_folder.setdefault(path.parent.relative_to(root).as_posix(), []).append(path)
    for folder, members in sorted(per_folder.items()):
        if len(members) > MAX_FOLDER_FILES:
            problems.append(f"{folder}: {len(members)} source files (at most {MAX_FOLDER_FILES}); "
                            "split it into folders by concept")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s); docs/architecture.md, \"Layers and targets\", "
              "says what each layer may include.")
        return 1
    largest = max(per_folder.items(), key=lambda kv: len(kv[1]))
    print(f"layers: {len(files)} files checked, no upward include; largest folder {largest[0]} "
          f"({len(largest[1])} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
