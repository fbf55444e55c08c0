#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/probe_cli_test.py — checks vgpu-probe's JSON outputs and exit codes.

    probe_cli_test.py <check> <path-to-vgpu-probe>

check is one of inventory_json, select_json, bench_json, errors, cache_untrusted. Each JSON
output is parsed and its required fields are checked for presence and type; a failed check
raises (exit 1) with what was wrong and the probe's output. cache_untrusted plants symlinked
folders, FIFOs, sockets, devices and a read-only directory in private cache directories and
checks that `vgpu-probe cache` never deletes outside them, never hangs, and says what it left.
"""
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile


def run(probe, *args, expect=0):
    """Runs the probe; returns (stdout, stderr) after checking the exit code."""
    p = subprocess.run([probe, *args], capture_output=True, text=True, timeout=280)
    if p.returncode != expect:
        raise AssertionError(f"vgpu-probe {' '.join(args)} exited {p.returncode}, expected {expect}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p.stdout, p.stderr


def require(obj, fields, where):
    """Checks that obj (a dict) has every field with the given type(s)."""
    if not isinstance(obj, dict):
        raise AssertionError(f"{where}: expected an object, got {obj!r}")
    for name, types in fields.items():
        if name not in obj:
            raise AssertionError(f"{where}: missing field '{name}' in {json.dumps(obj)[:400]}")
        if not isinstance(obj[name], types):
            raise AssertionError(f"{where}: field '{name}' is {type(obj[name]).__name__}, not {types}")


NUM = (int, float)


def inventory_json(probe):
    out, _ = run(probe, "--json")
    d = json.loads(out)
    require(d, {"version": str, "cache_format_version": int, "backends": list, "devices": list}, "inventory")
    names = set()
    for b in d["backends"]:
        require(b, {"name": str, "compiled_in": bool, "available": bool, "reason": str}, "backend")
        if not b["available"] and not b["reason"]:
            raise AssertionError(f"unavailable backend {b['name']} gives no reason")
        names.add(b["name"])
    if not {"cuda", "vulkan", "opengl", "cpu"} <= names:
        raise AssertionError(f"backends listed: {names}")
    if not d["devices"]:
        raise AssertionError("no device listed (the CPU is always there)")
    for dev in d["devices"]:
        require(dev, {"id": str, "backend": str, "type": str, "name": str, "driver_version": str,
                      "limits": dict, "fingerprint": dict, "self_test": dict}, "device")
        require(dev["limits"], {"max_workgroup_invocations": int, "max_buffer_bytes": int}, dev["id"] + ".limits")
        require(dev["fingerprint"], {"hex": str, "text": str}, dev["id"] + ".fingerprint")
        require(dev["self_test"], {"passed": bool, "seconds": NUM}, dev["id"] + ".self_test")
        if not dev["self_test"]["passed"]:
            raise AssertionError(f"{dev['id']} self-test failed: {dev['self_test']}")


def select_json(probe):
    out, _ = run(probe, "select", "matmul", "64", "--json")
    s = json.loads(out)
    require(s, {"op": str, "shape": list, "size_class": int, "device": str, "source": str,
                "calibration_seconds": NUM, "lookup_seconds": NUM, "candidates": list}, "select")
    if s["shape"] != [64, 64, 64] or s["op"] != "matmul":
        raise AssertionError(f"select answered for {s['op']} {s['shape']}")
    if s["source"] not in ("calibrated", "persisted", "forced", "fallback", "only"):
        raise AssertionError(f"unknown source {s['source']}")
    for c in s["candidates"]:
        require(c, {"device": str, "eligible": bool, "seconds": NUM, "runs": int, "demoted": bool, "note": str},
                "candidate")
    if s["candidates"][0]["device"] != s["device"]:
        raise AssertionError("the chosen device is not the first candidate")
    # Asked again in a new process, the choice comes from the selection cache.
    again = json.loads(run(probe, "select", "matmul", "60", "--json")[0])
    if again["device"] != s["device"] or again["source"] not in ("persisted", "only", "forced"):
        raise AssertionError(f"second process: {again['device']} [{again['source']}] after {s['device']}")


def bench_json(probe):
    out, err = run(probe, "bench", "--quick", "--json")
    if "vgpu-probe bench [1/" not in err:
        raise AssertionError(f"no progress lines on stderr:\n{err}")
    b = json.loads(out)
    require(b, {"version": str, "quick": bool, "devices": list}, "bench")
    if not b["devices"]:
        raise AssertionError("bench measured no device")
    for d in b["devices"]:
        require(d, {"id": str, "round_trip_seconds": NUM, "upload_gb_per_s": NUM, "download_gb_per_s": NUM,
                    "matmul_gflops": dict}, "bench device")
        if d["error"] is not None:
            raise AssertionError(f"{d['id']} failed: {d['error']}")
        if not (d["round_trip_seconds"] > 0 and d["upload_gb_per_s"] > 0 and d["download_gb_per_s"] > 0):
            raise AssertionError(f"{d['id']}: non-positive figure in {d}")
        if sorted(d["matmul_gflops"]) != ["256", "64"] or min(d["matmul_gflops"].values()) <= 0:
            raise AssertionError(f"{d['id']}: matmul figures {d['matmul_gflops']}")


def errors(probe):
    out, _ = run(probe, "--help")
    if "Exit codes:" not in out:
        raise AssertionError("--help does not document the exit codes")
    for args in (["select", "matmul", "64x"], ["select", "nope", "16"], ["select", "matmul", "16x16"],
                 ["bench", "--device", "vulkan:99"]):
        _, err = run(probe, *args, expect=3)
        if "Fix:" not in err:
            raise AssertionError(f"vgpu-probe {' '.join(args)}: no Fix hint in\n{err}")
    run(probe, "select", "matmul", expect=2)  # SIZE missing: a usage error


NOBODY = 65534
ENTRY_A = "0123456789abcdef0123456789abcdef.vgc"
ENTRY_B = "fedcba9876543210fedcba9876543210.vgc"


def cache_run(probe, cache_dir, *args, expect, user=None, stdout_only=False):
    """Runs `vgpu-probe cache ARGS` on cache_dir (30 s deadline: a hang fails); returns stdout + stderr
    (stdout only when asked)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VGPU_CACHE_DISABLE", "VGPU_CACHE_MAX_BYTES")}
    env["VGPU_CACHE_DIR"] = cache_dir
    extra = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    try:
        p = subprocess.run([probe, "cache", *args], capture_output=True, text=True, timeout=30, env=env, **extra)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"vgpu-probe cache {' '.join(args)} on {cache_dir} did not finish in 30 s (it hangs)\n"
                             f"stdout so far:\n{e.stdout}") from None
    out = p.stdout + p.stderr
    if p.returncode != expect:
        raise AssertionError(f"vgpu-probe cache {' '.join(args)} exited {p.returncode}, expected {expect}\n{out}")
    return p.stdout if stdout_only else out


def snapshot(root):
    """Every name under root (links not followed) with what it is and holds."""
    found = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[path] = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    found[path] = f.read()
            else:
                found[path] = stat.S_IFMT(st.st_mode)
    return found


def fill_outside(folder):
    """Files of any name a symlinked cache folder might point to: all must survive."""
    os.makedirs(folder, exist_ok=True)
    for name, text in ((ENTRY_A, "entry-like"), ("notes.txt", "my notes"),
                       (".tmp-00000000000000000000000000000001-Ab12Cd", "temp-like")):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    old = 1_000_000_000  # 2001: older than any temp-file age limit
    os.utime(os.path.join(folder, ".tmp-00000000000000000000000000000001-Ab12Cd"), (old, old))


def require_in(out, words, what):
    for w in words:
        if w not in out:
            raise AssertionError(f"{what}: '{w}' missing in\n{out}")


def cache_untrusted(probe):
    base = os.path.dirname(os.path.abspath(os.environ.get("VGPU_CACHE_DIR", tempfile.gettempdir())))
    work = tempfile.mkdtemp(prefix="probe-untrusted-", dir=base)
    try:
        # 1. v1 a symlink, and (in another cache) kind folders that are symlinks.
        outside = os.path.join(work, "outside")
        for kind in ("spirv", "glbin"):
            fill_outside(os.path.join(outside, kind))
        fill_outside(outside)
        before = snapshot(outside)
        c1 = os.path.join(work, "c1")
        os.makedirs(c1)
        os.symlink(outside, os.path.join(c1, "v1"))
        c2 = os.path.join(work, "c2")
        os.makedirs(os.path.join(c2, "v1", "vkpc"))
        with open(os.path.join(c2, "v1", "vkpc", ENTRY_B), "w") as f:
            f.write("an entry-named file of this cache: clear deletes it")
        os.symlink(os.path.join(outside, "spirv"), os.path.join(c2, "v1", "spirv"))
        os.symlink(os.path.join(outside, "glbin"), os.path.join(c2, "v1", "glbin"))
        for c in (c1, c2):
            out = cache_run(probe, c, "stats", expect=0)
            require_in(out, ["unusable", "symlink", "Fix: remove it"], f"stats on {c}")
            out = cache_run(probe, c, "verify", "--fix", expect=1)
            require_in(out, ["LEFT ", "symlink", "Fix: remove it"], f"verify --fix on {c}")
            out = cache_run(probe, c, "clear", expect=1)
            require_in(out, ["LEFT ", "symlink", "Fix: remove it"], f"clear on {c}")
            left = json.loads(cache_run(probe, c, "clear", "--json", expect=1, stdout_only=True))["left"]
            if not left or not all(not item["failed"] and "Fix: " in item["why"] for item in left):
                raise AssertionError(f"clear --json on {c}: left = {left}")
        if os.path.exists(os.path.join(c2, "v1", "vkpc", ENTRY_B)):
            raise AssertionError("clear did not delete an entry-named file of the cache itself")
        if snapshot(outside) != before:
            raise AssertionError(f"files outside the cache changed:\nbefore {before}\nafter  {snapshot(outside)}")

        # 2. Non-files where entries belong: nothing hangs, everything is reported and kept.
        c3 = os.path.join(work, "c3")
        glbin = os.path.join(c3, "v1", "glbin")
        os.makedirs(glbin)
        planted = {"junk": "a FIFO", ENTRY_A: "a FIFO", ENTRY_B: "a symlink", "sock": "a socket", "dir": "a directory"}
        os.mkfifo(os.path.join(glbin, "junk"))
        os.mkfifo(os.path.join(glbin, ENTRY_A))
        os.symlink("/dev/zero", os.path.join(glbin, ENTRY_B))
        os.mkdir(os.path.join(glbin, "dir"))
        cwd = os.getcwd()
        os.chdir(glbin)  # a relative name keeps the socket path short
        try:
            socket.socket(socket.AF_UNIX).bind("sock")
        finally:
            os.chdir(cwd)
        try:
            os.mknod(os.path.join(glbin, "zero"), stat.S_IFCHR | 0o644, os.makedev(1, 5))
            planted["zero"] = "a character device"
        except PermissionError as e:
            print(f"cache_untrusted: skipping the character device: mknod needs CAP_MKNOD ({e})")
        words = sorted(set(planted.values()))
        cache_run(probe, c3, "stats", expect=0)
        require_in(cache_run(probe, c3, "verify", expect=1), words + list(planted), "verify with non-files")
        require_in(cache_run(probe, c3, "verify", "--fix", expect=1), words + ["LEFT ", "Fix: "], "verify --fix")
        require_in(cache_run(probe, c3, "clear", expect=1), words + ["LEFT ", "Fix: "], "clear with non-files")
        for name in planted:
            os.lstat(os.path.join(glbin, name))  # raises when it was deleted

        # 3. A read-only cache as a non-root user: say what could not be deleted, and why.
        c4 = os.path.join(work, "c4")
        spirv = os.path.join(c4, "v1", "spirv")
        os.makedirs(spirv)
        for name in (ENTRY_A, ENTRY_B):
            with open(os.path.join(spirv, name), "w") as f:
                f.write("not a valid entry: verify --fix wants it gone")
        os.chmod(work, 0o755)
        user = NOBODY if os.geteuid() == 0 else None
        if user is None:
            for p in (c4, os.path.join(c4, "v1"), spirv):
                os.chmod(p, 0o555)
        try:
            for args in (("clear",), ("verify", "--fix")):
                out = cache_run(probe, c4, *args, expect=1, user=user)
                require_in(out, ["LEFT ", "cannot delete it: Permission denied", "Fix: "],
                           f"{' '.join(args)} on a read-only cache")
        except PermissionError as e:
            print(f"cache_untrusted: skipping the read-only check: cannot run as uid {NOBODY} ({e})")
        finally:
            for p in (c4, os.path.join(c4, "v1"), spirv):
                os.chmod(p, 0o755)
        for name in (ENTRY_A, ENTRY_B):
            os.lstat(os.path.join(spirv, name))

        require_in(run(probe, "--help")[0], ["cache clear"], "--help exit codes")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inventory_json", "select_json", "bench_json", "errors",
                                                 "cache_untrusted"):
        sys.exit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
    print(f"probe {sys.argv[1]}: ok")
