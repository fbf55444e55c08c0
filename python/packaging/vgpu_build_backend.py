# SPDX-License-Identifier: Apache-2.0
"""python/packaging/vgpu_build_backend.py — vgpu's PEP 517 build backend: `pip install .` and
`python -m build --wheel` build the Python package with the project's own CMake.

Debian 12 ships no scikit-build-core, so this backend (named in pyproject.toml with
backend-path) needs nothing beyond the standard library, CMake and the build dependencies the
CMake build already finds (pybind11-dev, python3-dev, numpy, libtbb-dev, ...): it works offline,
with or without build isolation. build_wheel configures the top-level CMake project for the
running interpreter with only the library and the Python module (VGPU_PYTHON_WHEEL: libvgpu
and the SPIR-V toolchain module inside the package, RPATH $ORIGIN), builds it, installs the
`python` component stripped into a staging folder and zips that into a wheel tagged for this
interpreter and platform. The version is the CMake project's (one source of truth).

Config settings (pip -C/--config-settings, python -m build -C):
  build-dir=PATH       the CMake build folder (default build-wheel/<interpreter tag> in the
                       source tree, kept, so a second build is incremental)
  build-type=TYPE      CMAKE_BUILD_TYPE (default Release)
  cmake.define.NAME=V  -DNAME=V for the configure step (e.g. cmake.define.VGPU_WITH_CUDA=OFF)
Environment: VGPU_JOBS, the build's parallelism (default: the machine's CPUs).
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class BuildError(Exception):
    """A build step failed; the message says which and ends in a Fix: hint."""


def _version():
    """The version from the top-level CMakeLists.txt's project(vgpu VERSION x.y.z)."""
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(vgpu\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not match:
        raise BuildError("CMakeLists.txt has no project(vgpu VERSION x.y.z). Fix: restore the project() line.")
    return match.group(1)


def _project_table():
    """pyproject.toml's [project] table (tomllib, Python 3.11+; else the few keys read by hand)."""
    path = os.path.join(SOURCE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            return tomllib.load(f).get("project", {})
    except ImportError:  # Python < 3.11: name, description, requires-python, dependencies only
        text = open(path, encoding="utf-8").read().split("[project]", 1)[1].split("\n[", 1)[0]
        table = {k: v for k, v in re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', text, re.M)}
        deps = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.M | re.S)
        table["dependencies"] = re.findall(r'"([^"]+)"', deps.group(1)) if deps else []
        return table


def _tag():
    """The wheel tag of this interpreter: cp311-cp311-linux_x86_64 style (no manylinux claim:
    the module links the system's oneTBB, xxHash and cpuinfo)."""
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = impl + getattr(sys, "abiflags", "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{abi}-{platform}"


def _metadata():
    """The METADATA file's text (core metadata 2.1)."""
    project = _project_table()
    lines = ["Metadata-Version: 2.1", f"Name: {project.get('name', 'vgpu')}", f"Version: {_version()}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    license_ = project.get("license")
    if isinstance(license_, dict) and license_.get("text"):
        lines.append(f"License: {license_['text']}")
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    readme = os.path.join(SOURCE, "python", "packaging", "README.md")
    body = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    if body:
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _dist_info_name():
    return f"vgpu-{_version()}.dist-info"


def _run(args, what, log):
    """Runs args (output to log and, shortened, into the error); raises BuildError on failure."""
    print("vgpu build backend: " + " ".join(args), file=sys.stderr, flush=True)
    with open(log, "a", encoding="utf-8") as out:
        p = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        tail = open(log, encoding="utf-8", errors="replace").read()[-4000:]
        raise BuildError(f"{what} failed (exit {p.returncode}; the whole log: {log}):\n{tail}\n"
                         "Fix: install what the log says is missing (Debian: tools/dev.sh lists every package), "
                         "then run the command again.")


def _settings(config_settings):
    """(build_dir, build_type, [-D...]) from the config settings."""
    cs = dict(config_settings or {})
    build_dir = cs.pop("build-dir", None) or os.path.join(SOURCE, "build-wheel", _tag().split("-")[0])
    build_type = cs.pop("build-type", None) or "Release"
    defines = []
    for key, value in cs.items():
        if key.startswith("cmake.define."):
            defines.append(f"-D{key[len('cmake.define.'):]}={value}")
        elif key not in ("--global-option", "--build-option"):  # pip's legacy keys carry nothing here
            raise BuildError(f"unknown config setting '{key}'. Fix: use build-dir, build-type or "
                             "cmake.define.NAME (python/packaging/vgpu_build_backend.py).")
    return os.path.abspath(build_dir), build_type, defines


def _build(config_settings, staging):
    """Configures, builds and installs the python component into staging; returns the
    package's folder there."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise BuildError("cmake was not found. Fix: install CMake 3.25 or newer (Debian: apt-get install cmake).")
    build_dir, build_type, defines = _settings(config_settings)
    os.makedirs(build_dir, exist_ok=True)
    log = os.path.join(build_dir, "wheel-build.log")
    open(log, "w").close()
    site = "site"  # the package lands in <staging>/site/vgpu
    generator = ["-G", "Ninja"] if shutil.which("ninja") and not os.path.exists(
        os.path.join(build_dir, "Makefile")) else []
    _run([cmake, "-S", SOURCE, "-B", build_dir, *generator, f"-DCMAKE_BUILD_TYPE={build_type}",
          f"-DPython_EXECUTABLE={sys.executable}", "-DVGPU_WITH_PYTHON=ON", "-DVGPU_PYTHON_WHEEL=ON",
          f"-DVGPU_PYTHON_INSTALL_DIR={site}", "-DVGPU_BUILD_TOOLS=OFF", "-DVGPU_BUILD_TESTS=OFF",
          "-DVGPU_BUILD_BENCH=OFF", "-DVGPU_WITH_MPI=OFF", "-DVGPU_INSTALL=ON", *defines],
         "configuring vgpu with CMake", log)
    jobs = os.environ.get("VGPU_JOBS") or str(os.cpu_count() or 2)
    _run([cmake, "--build", build_dir, "--target", "vgpu_python", "-j", jobs], "building vgpu's Python module", log)
    _run([cmake, "--install", build_dir, "--component", "python", "--prefix", staging, "--strip"],
         "installing the python component", log)
    package = os.path.join(staging, site, "vgpu")
    if not os.path.exists(os.path.join(package, "__init__.py")):
        raise BuildError(f"the install left no vgpu package in {package} (log: {log}). Fix: report this as a bug.")
    return package


def _package_files(package):
    """(archive name, path) of every file of the package; a versioned library reached through
    its SONAME link is stored once, under the SONAME (zip keeps no links)."""
    files = []
    link_targets = set()
    for root, _, names in os.walk(package):
        for name in names:
            path = os.path.join(root, name)
            if os.path.islink(path):
                link_targets.add(os.path.realpath(path))
    for root, _, names in os.walk(package):
        for name in sorted(names):
            path = os.path.join(root, name)
            if not os.path.islink(path) and os.path.realpath(path) in link_targets:
                continue
            if "__pycache__" in root:
                continue
            files.append(("vgpu/" + os.path.relpath(path, package).replace(os.sep, "/"), path))
    return sorted(files)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_dist_info(directory):
    """Writes the .dist-info folder (METADATA, WHEEL) into directory; returns its name."""
    name = _dist_info_name()
    os.makedirs(os.path.join(directory, name), exist_ok=True)
    with open(os.path.join(directory, name, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(directory, name, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(f"Wheel-Version: 1.0\nGenerator: vgpu_build_backend {_version()}\nRoot-Is-Purelib: false\n"
                f"Tag: {_tag()}\n")
    return name


# ---- the PEP 517 hooks


def get_requires_for_build_wheel(config_settings=None):
    """Nothing from PyPI: CMake, pybind11 and numpy come from the system (Debian packages)."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Writes vgpu-<version>.dist-info with METADATA and WHEEL; returns its name."""
    return _write_dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the module with CMake and writes vgpu-<version>-<tag>.whl into wheel_directory."""
    try:
        staging = tempfile.mkdtemp(prefix="vgpu-wheel-")
        try:
            package = _build(config_settings, staging)
            meta = tempfile.mkdtemp(prefix="vgpu-meta-", dir=staging)
            dist_info = _write_dist_info(meta)
            wheel_name = f"vgpu-{_version()}-{_tag()}.whl"
            os.makedirs(wheel_directory, exist_ok=True)
            record = []
            with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as whl:
                for arcname, path in _package_files(package):
                    data = open(path, "rb").read()
                    info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
                    info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    whl.writestr(info, data)
                    record.append(_record_line(arcname, data))
                for meta_file in ("METADATA", "WHEEL"):
                    arcname = f"{dist_info}/{meta_file}"
                    data = open(os.path.join(meta, dist_info, meta_file), "rb").read()
                    whl.writestr(arcname, data)
                    record.append(_record_line(arcname, data))
                record.append(f"{dist_info}/RECORD,,")
                whl.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
            print(f"vgpu build backend: wrote {wheel_name}", file=sys.stderr)
            return wheel_name
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except BuildError as e:
        raise SystemExit(f"vgpu: {e}") from None


def build_sdist(sdist_directory, config_settings=None):
    """An sdist is the source tree as git tracks it (git archive): the wheel is built from it."""
    name = f"vgpu-{_version()}"
    os.makedirs(sdist_directory, exist_ok=True)
    out = os.path.join(sdist_directory, name + ".tar.gz")
    work = tempfile.mkdtemp(prefix="vgpu-sdist-")
    try:
        pkg_info = os.path.join(work, "PKG-INFO")  # the sdist's metadata, at its top (git >= 2.35)
        with open(pkg_info, "w", encoding="utf-8") as f:
            f.write(_metadata())
        p = subprocess.run(["git", "-C", SOURCE, "archive", "--format=tar.gz", f"--prefix={name}/",
                            f"--add-file={pkg_info}", "-o", out, "HEAD"], capture_output=True, text=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if p.returncode != 0:
        raise SystemExit(f"vgpu: git archive failed: {p.stderr.strip()}\nFix: build the sdist from a git clone of vgpu.")
    return name + ".tar.gz"
