#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ctest packaging.pip: the Python package the way a user installs it, offline.
#
#   pip_install_test.sh SOURCE_DIR WORK_DIR PYTHON [CMAKE_DEFINE...]
#
# 1. A venv of PYTHON (--system-site-packages: Debian's numpy and pybind11), then
#    `pip install --no-build-isolation SOURCE_DIR` with the build kept in WORK_DIR/build (a rerun
#    is incremental); each CMAKE_DEFINE (NAME=VALUE) goes in as --config-settings=cmake.define.
# 2. From a folder that is not the source tree: `python -m vgpu --json` lists the devices,
#    `import vgpu` comes from the venv, a matmul on cpu:0 is right, the extension's RPATH is
#    $ORIGIN and libvgpu (and the SPIR-V toolchain module where a GPU API was built) lies
#    beside it; `pip uninstall` removes every file it installed.
# 3. `python -m build --wheel --no-isolation` (Debian's python3-build) writes a wheel tagged
#    for this interpreter whose RECORD matches its files; skipped, saying so, without it.
set -euo pipefail

src=$1 work=$2 python=$3
shift 3
settings=(--config-settings="build-dir=$work/build" --config-settings=build-type=None)
for define in "$@"; do settings+=(--config-settings="cmake.define.$define"); done

fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work"
rm -rf "$work/venv" "$work/elsewhere" "$work/dist"
"$python" -m venv --system-site-packages "$work/venv" ||
  fail "$python -m venv failed. Fix: apt-get install python3-venv"
venv_python=$work/venv/bin/python
t0=$(date +%s)
if ! "$venv_python" -m pip install --no-build-isolation --no-index "${settings[@]}" "$src" >"$work/pip.log" 2>&1; then
  tail -n 60 "$work/pip.log"
  fail "pip install --no-build-isolation $src failed (log: $work/pip.log)"
fi
echo "pip install --no-build-isolation: $(($(date +%s) - t0)) s"

mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
json=$("$venv_python" -m vgpu --json) || fail "python -m vgpu --json failed outside the source tree"
"$venv_python" - "$json" "$work/venv" <<'EOF'
import json, os, subprocess, sys
import numpy as np
import vgpu

doc = json.loads(sys.argv[1])
if doc.get("schema") != 1 or not any(d["id"] == "cpu:0" for d in doc["devices"]):
    sys.exit(f"FAIL: python -m vgpu --json lists no cpu:0: {doc}")
package = os.path.dirname(vgpu.__file__)
if not package.startswith(sys.argv[2]):
    sys.exit(f"FAIL: import vgpu took {package}, not the venv's")
rng = np.random.default_rng(7)
a = rng.standard_normal((37, 53)).astype(np.float32)
b = rng.standard_normal((53, 29)).astype(np.float32)
c = vgpu.Cache("cpu:0").matmul(a, b)
if not np.allclose(c, a @ b, rtol=1e-4, atol=1e-4):
    sys.exit("FAIL: the installed module's matmul is wrong")
files = sorted(os.listdir(package))
ext = next(f for f in files if f.startswith("_vgpu") and f.endswith(".so"))
rpath = subprocess.run(["readelf", "-d", os.path.join(package, ext)], capture_output=True, text=True).stdout
if "[$ORIGIN]" not in rpath:
    sys.exit(f"FAIL: {ext}'s RPATH/RUNPATH is not $ORIGIN:\n{rpath}")
if "libvgpu.so.0" not in files:
    sys.exit(f"FAIL: no libvgpu.so.0 beside the extension: {files}")
gpu_api = any(b["compiled_in"] for b in doc["backends"] if b["name"] in ("vulkan", "opengl"))
if gpu_api and "libvgpu_shader_toolchain.so" not in files:
    sys.exit(f"FAIL: a GPU API is built in but the SPIR-V toolchain module is not in the package: {files}")
print(f"installed package: {', '.join(files)}; devices {[d['id'] for d in doc['devices']]}")
EOF
files=$("$venv_python" -m pip show -f vgpu | sed -n 's/^  //p')
"$venv_python" -m pip uninstall -y vgpu >/dev/null || fail "pip uninstall vgpu failed"
site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
left=$(cd "$site" && for f in $files; do [[ -e $f ]] && echo "$f"; done || true)
[[ -z "$left" ]] || fail "pip uninstall left: $left"
echo "pip uninstall removed every installed file"

if ! "$python" -c 'import build' 2>/dev/null; then
  echo "skipped: python -m build (Debian's python3-build is not installed; Fix: apt-get install python3-build)"
  exit 0
fi
cd "$src"
if ! "$python" -m build --wheel --no-isolation --outdir "$work/dist" "${settings[@]/--config-settings=/-C}" \
    >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log"
  fail "python -m build --wheel --no-isolation failed (log: $work/build.log)"
fi
"$python" - "$work/dist" <<'EOF'
import base64, hashlib, os, sys, sysconfig, zipfile
dist = sys.argv[1]
wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
if len(wheels) != 1 or not wheels[0].endswith(f"-{impl}-{impl}-{platform}.whl"):
    sys.exit(f"FAIL: expected one wheel tagged {impl}-{impl}-{platform}, got {wheels}")
with zipfile.ZipFile(os.path.join(dist, wheels[0])) as z:
    names = z.namelist()
    record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
    rows = [r.split(",") for r in z.read(record_name).decode().splitlines()]
    listed = {r[0] for r in rows}
    if listed != set(names):
        sys.exit(f"FAIL: RECORD lists {sorted(listed ^ set(names))} differently from the archive")
    for name, digest, size in rows:
        if name == record_name:
            continue
        data = z.read(name)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if digest != want or int(size) != len(data):
            sys.exit(f"FAIL: RECORD's hash or size of {name} is wrong")
    for need in ("vgpu/__init__.py", "vgpu/_vgpu.pyi", "vgpu/py.typed", "vgpu/libvgpu.so.0"):
        if need not in names:
            sys.exit(f"FAIL: the wheel has no {need}: {names}")
print(f"python -m build: {wheels[0]}, {len(names)} files, RECORD checked")
EOF
