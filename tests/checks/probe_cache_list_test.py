#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/checks/probe_cache_list_test.py — `vgpu-probe cache list` and `--device` on `select` and `cache`.

    probe_cache_list_test.py cache_list|device_filters <path-to-vgpu-probe> <path-to-vgpu-bundle-warm>

Both fill a throw-away VGPU_CACHE_DIR with `vgpu-bundle-warm warm` (the scale-add user kernel on
every device, whose entries carry the kernel's name, and a matmul selection), then:

cache_list      checks every field of `cache list --json` (kind, 32-hex key matching the file name,
                label, device against `vgpu-probe list`, bytes equal to the file size, age) and the
                text listing (one line per entry, same order: newest first); an entry dated back
                with os.utime shows its age in days and moves last (no sleeping: the age bound is
                the test's own elapsed time); a damaged entry is listed invalid.
device_filters  `cache list|stats|verify|clear --device ID` keep exactly the entries of that
                device (a kernel entry whose fingerprint is the device's, a selection that
                measured it) and nothing of the others; `select --device` keeps the candidates to
                those devices; an unknown id is exit 2 with a Fix (and a JSON error document under
                --json), and deletes nothing.
A failed check raises (exit 1) with what was wrong and the probe's output.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

KINDS = {"spirv", "vkpc", "glbin", "cubin", "select"}
# The scale-add kernel's names (tests/support/scale_add_kernel.hpp) per backend that stores it.
KERNEL_NAMES = {"vulkan": ("spirv", "test.vk_scale_add"), "opengl": ("glbin", "test.gl_scale_add")}


def environment(cache_dir):
    """The environment of every run: the private cache directory, no other cache settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VGPU_CACHE_DISABLE", "VGPU_CACHE_MAX_BYTES", "VGPU_DEVICE")}
    env["VGPU_CACHE_DIR"] = cache_dir
    return env


def run(cmd, env, expect=0):
    """Runs cmd; returns (stdout, stderr) after checking the exit code (280 s: a hang fails)."""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=280)
    if p.returncode != expect:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}, expected {expect}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p.stdout, p.stderr


def warmed(probe, warm, work):
    """A cache directory warmed by vgpu-bundle-warm; returns (env, devices of `--json`, start time)."""
    env = environment(os.path.join(work, "cache"))
    start = time.time()
    run([warm, "warm"], env)
    devices = json.loads(run([probe, "--no-self-test", "--json"], env)[0])["devices"]
    return env, devices, start


def listing(probe, env, *args):
    """The entries of `cache list --json ARGS` (the document checked for its top-level fields)."""
    doc = json.loads(run([probe, "cache", "list", "--json", *args], env)[0])
    if next(iter(doc)) != "schema" or doc["schema"] != 1:
        raise AssertionError(f"cache list --json does not start with \"schema\": 1: {doc}")
    for field, kind in (("directory", str), ("format_version", int), ("device_filter", list), ("entries", list)):
        if not isinstance(doc.get(field), kind):
            raise AssertionError(f"cache list --json: '{field}' missing or not {kind.__name__}: {doc}")
    return doc["entries"]


def check_entry(e, devices, max_age):
    """Checks one entry of `cache list --json` against the file it names and this machine's devices."""
    types = {"kind": str, "key": str, "label": str, "device": str, "backend": (str, type(None)),
             "driver": (str, type(None)), "fingerprint": str, "bytes": int, "payload_bytes": int,
             "age_seconds": int, "path": str, "valid": bool, "problem": type(None)}
    for field, kind in types.items():
        if not isinstance(e.get(field, ...), kind):
            raise AssertionError(f"entry field '{field}' is {e.get(field, 'missing')!r}, not {kind}: {e}")
    if e["kind"] not in KINDS or not re.fullmatch(r"[0-9a-f]{32}", e["key"]):
        raise AssertionError(f"entry kind or key: {e}")
    if os.path.basename(e["path"]) != e["key"] + ".vgc" or os.path.basename(os.path.dirname(e["path"])) != e["kind"]:
        raise AssertionError(f"entry path does not hold its kind and key: {e}")
    if e["bytes"] != os.path.getsize(e["path"]) or not 0 < e["payload_bytes"] < e["bytes"]:
        raise AssertionError(f"entry bytes {e['bytes']} / payload {e['payload_bytes']}, file has "
                             f"{os.path.getsize(e['path'])}: {e}")
    if not 0 <= e["age_seconds"] <= max_age:
        raise AssertionError(f"entry age {e['age_seconds']} s, expected 0 ... {max_age} (this test's run time)")
    if e["kind"] == "select":
        ids = e["device"].split(", ")
        known = {d["id"] for d in devices}
        if e["backend"] is not None or not (set(ids) <= known or e["device"].startswith("scope ")):
            raise AssertionError(f"selection entry device '{e['device']}' is not ids of {sorted(known)}: {e}")
        if not e["label"].startswith(("selection: ", "selection pointer: ", "prediction model: ", "variant choice: ")):
            raise AssertionError(f"selection entry label '{e['label']}': {e}")
        return
    owner = [d for d in devices if d["fingerprint"]["hex"] == e["fingerprint"]]
    if len(owner) != 1:
        raise AssertionError(f"kernel entry fingerprint {e['fingerprint']} is not one device's: {e}")
    d = owner[0]
    if e["device"] != d["name"] or e["backend"] != d["backend"] or not e["driver"]:
        raise AssertionError(f"entry device {e['device']!r} ({e['backend']}, {e['driver']!r}), expected "
                             f"{d['name']!r} ({d['backend']}), as `vgpu-probe list` names {d['id']}")


def cache_list(probe, warm):
    work = tempfile.mkdtemp(prefix="probe-cache-list-")
    try:
        env, devices, start = warmed(probe, warm, work)
        entries = listing(probe, env)
        max_age = int(time.time() - start) + 2
        for e in entries:
            check_entry(e, devices, max_age)
        # The scale-add kernel's own entries carry its name, one per GPU device that stores it.
        gl_binaries = os.environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() not in ("true", "1")
        for d in devices:
            if d["backend"] not in KERNEL_NAMES or (d["backend"] == "opengl" and not gl_binaries):
                continue
            kind, name = KERNEL_NAMES[d["backend"]]
            found = [e for e in entries if e["kind"] == kind and e["label"] == name and e["device"] == d["name"]
                     and e["fingerprint"] == d["fingerprint"]["hex"]]
            if len(found) != 1:
                raise AssertionError(f"{d['id']}: expected one {kind} entry labelled {name}, got {found}\nall: {entries}")
        if len(devices) > 1 and not any(e["label"].startswith("selection: matmul class ") for e in entries):
            raise AssertionError(f"no matmul selection entry in {entries}")
        # Newest first, by the files' modification times.
        mtimes = [os.stat(e["path"]).st_mtime_ns for e in entries]
        if mtimes != sorted(mtimes, reverse=True):
            raise AssertionError(f"cache list is not newest first: {[(e['key'], m) for e, m in zip(entries, mtimes)]}")

        # The text: a heading, then one line per entry in the same order, with its fields.
        text, _ = run([probe, "cache", "list"], env)
        lines = text.splitlines()
        if len(lines) != len(entries) + 1 or not lines[0].startswith("KIND") or "DEVICE" not in lines[0]:
            raise AssertionError(f"cache list printed\n{text}\nexpected a heading and {len(entries)} lines")
        for line, e in zip(lines[1:], entries):
            if not (line.startswith(e["kind"] + " ") and e["key"] in line and e["label"] in line and
                    e["device"] in line and re.search(r" \d+[smhd]  ", line)):
                raise AssertionError(f"cache list line '{line}' lacks a field of {e}")

        # An entry dated back 3 days and 2 hours: its age in days, and listed last.
        old = entries[0]
        then = time.time() - (3 * 86400 + 7200)
        os.utime(old["path"], (then, then))
        entries = listing(probe, env)
        if entries[-1]["key"] != old["key"] or not 3 * 86400 + 7200 <= entries[-1]["age_seconds"] <= 3 * 86400 + 7200 + max_age:
            raise AssertionError(f"the entry dated back: {entries[-1]}, expected {old['key']} aged 3d 2h")
        text, _ = run([probe, "cache", "list"], env)
        last = text.splitlines()[-1]
        if old["key"] not in last or not re.search(r" 3d  ", last):
            raise AssertionError(f"the entry dated back 3 days reads '{last}'")

        # A damaged entry is listed, invalid, with its problem and no label.
        with open(old["path"], "r+b") as f:
            f.write(b"NOTVGPU!")
        bad = [e for e in listing(probe, env) if e["key"] == old["key"]]
        if len(bad) != 1 or bad[0]["valid"] or not bad[0]["problem"].startswith("magic") or bad[0]["label"] is not None:
            raise AssertionError(f"the damaged entry is listed as {bad}")
        text, _ = run([probe, "cache", "list"], env)
        if "invalid: magic" not in text:
            raise AssertionError(f"the damaged entry is not shown invalid:\n{text}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def snapshot(root):
    """Every file under root with its bytes (to show that a refused command changed nothing)."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                found[os.path.join(folder, name)] = f.read()
    return found


def belongs(e, d):
    """Whether entry e is device d's, as the docs define it (docs/probe.md, cache list)."""
    if e["kind"] == "select":
        return d["id"] in e["device"].split(", ")
    return e["fingerprint"] == d["fingerprint"]["hex"]


def usage_error(probe, env, args, what):
    """Checks that ARGS exits 2 with a Fix naming the bad id, also as a JSON error document."""
    _, err = run([probe, *args], env, expect=2)
    if "nope:7" not in err or "Fix:" not in err:
        raise AssertionError(f"{what}: the error does not name the id with a Fix:\n{err}")
    out, _ = run([probe, *args, "--json"], env, expect=2)
    e = json.loads(out)
    if e["error"]["exit_code"] != 2 or e["error"]["category"] != "invalid_argument" or "Fix:" not in e["error"]["message"]:
        raise AssertionError(f"{what} --json: error document {e}")


def device_filters(probe, warm):
    work = tempfile.mkdtemp(prefix="probe-cache-device-")
    try:
        env, devices, _ = warmed(probe, warm, work)
        everything = listing(probe, env)
        for d in devices:
            mine = [e for e in everything if belongs(e, d)]
            got = listing(probe, env, "--device", d["id"])
            if sorted(e["key"] for e in got) != sorted(e["key"] for e in mine):
                raise AssertionError(f"cache list --device {d['id']}: {[e['key'] for e in got]}, expected "
                                     f"{[e['key'] for e in mine]} of\n{everything}")
            others = [e for e in got if e["kind"] != "select" and e["fingerprint"] != d["fingerprint"]["hex"]]
            if others:
                raise AssertionError(f"cache list --device {d['id']} shows another device's entries: {others}")
            stats = json.loads(run([probe, "cache", "stats", "--json", "--device", d["id"]], env)[0])
            verify = json.loads(run([probe, "cache", "verify", "--json", "--device", d["id"]], env)[0])
            if stats["entries"] != len(mine) or verify["entries"] != len(mine) or verify["valid"] != len(mine):
                raise AssertionError(f"--device {d['id']}: stats {stats['entries']}, verify {verify['entries']}/"
                                     f"{verify['valid']}, expected {len(mine)}")
            if stats["device_filter"] != [d["id"]]:
                raise AssertionError(f"cache stats --device {d['id']}: device_filter {stats['device_filter']}")
        # Two ids: the entries of either.
        if len(devices) >= 2:
            a, b = devices[0], devices[-1]
            got = listing(probe, env, "--device", f"{a['id']},{b['id']}")
            want = [e for e in everything if belongs(e, a) or belongs(e, b)]
            if sorted(e["key"] for e in got) != sorted(e["key"] for e in want):
                raise AssertionError(f"cache list --device {a['id']},{b['id']}: {got}")

        # An unknown id: exit 2 with a Fix, for every subcommand, and nothing deleted.
        before = snapshot(env["VGPU_CACHE_DIR"])
        for args in (["cache", "list"], ["cache", "stats"], ["cache", "verify", "--fix"], ["cache", "clear"],
                     ["select", "matmul", "64"]):
            usage_error(probe, env, [*args, "--device", "nope:7"], " ".join(args))
        if snapshot(env["VGPU_CACHE_DIR"]) != before:
            raise AssertionError("a command with an unknown --device changed the cache directory")

        # clear --device: that device's entries go, every other entry stays.
        victim = next((d for d in devices if any(belongs(e, d) and e["kind"] != "select" for e in everything)), None)
        if victim is not None:
            doc = json.loads(run([probe, "cache", "clear", "--json", "--device", victim["id"]], env)[0])
            mine = [e for e in everything if belongs(e, victim)]
            left = listing(probe, env)
            if doc["removed"] != len(mine) or doc["left"] or any(belongs(e, victim) for e in left):
                raise AssertionError(f"clear --device {victim['id']}: {doc}; left {left}")
            if sorted(e["key"] for e in left) != sorted(e["key"] for e in everything if not belongs(e, victim)):
                raise AssertionError(f"clear --device {victim['id']} removed another device's entries: {left}")

        # select --device: the candidates are those devices only.
        ids = [d["id"] for d in devices]
        for chosen in ([ids[-1]], [ids[0], ids[-1]] if len(ids) >= 2 else None):
            if not chosen:
                continue
            s = json.loads(run([probe, "select", "--json", "--device", ",".join(chosen), "axpy", "4096"], env)[0])
            if s["device"] not in chosen or not s["candidates"] or any(c["device"] not in chosen for c in s["candidates"]):
                raise AssertionError(f"select --device {','.join(chosen)}: device {s['device']}, candidates "
                                     f"{[c['device'] for c in s['candidates']]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


CHECKS = ("cache_list", "device_filters")

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    globals()[sys.argv[1]](sys.argv[2], sys.argv[3])
    print(f"probe {sys.argv[1]}: ok")
