#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/checks/probe_cli_test.py — checks vgpu-probe's JSON outputs and exit codes.

    probe_cli_test.py <check> <path-to-vgpu-probe>

check is one of inventory_json, feature_checks, select_json, bench_json, errors, exit_codes, json_anywhere,
vulkaninfo, cache_untrusted, cache_export, cache_import_errors, list_devices, read_only, usage_json. Each JSON output is parsed and its required fields are checked for
presence and type ("schema": 1 first, unknown values null; docs/probe.md); a failed check raises
(exit 1) with what was wrong and the probe's output. exit_codes runs one case of each code
`vgpu-probe --help` documents; json_anywhere gives --json before and after each subcommand;
vulkaninfo cross-checks the Vulkan devices' fields against `vulkaninfo --json` (skipped, saying
why, when vulkaninfo or a Vulkan device is missing). cache_untrusted plants symlinked
folders, FIFOs, sockets, devices and a read-only directory in private cache directories and
checks that `vgpu-probe cache` never deletes outside them, never hangs, and says what it left.
cache_export gives `cache export` a FIFO, a symlink, a directory and a character device of its
own as FILE (each refused and kept), `-` (standard output), an existing file (its mode kept) and a
file size limit (no temp file left); cache_import_errors imports bundles whose manifest has a
field of the wrong JSON type, or of a newer version (exit 2, never 4). list_devices checks `list`
(text, JSON, --device filters, a bad id) and the plain run's --device; read_only that the plain
run and `list` write nothing to the kernel cache; usage_json the error document of usage errors
under --json and -V.
"""
import ctypes
import ctypes.util
import json
import os
import resource
import shutil
import signal
import socket
import stat
import struct
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
SELECT_KIND = "select"  # EntryKind::selection in cache stats --json
OPT_INT = (int, type(None))
OPT_STR = (str, type(None))


def require_schema(doc, where):
    """Checks that a JSON document starts with "schema": 1 (docs/probe.md)."""
    if not isinstance(doc, dict) or not doc or next(iter(doc)) != "schema" or doc["schema"] != 1:
        raise AssertionError(f"{where}: the document does not start with \"schema\": 1: {json.dumps(doc)[:300]}")


def format_folder(probe):
    """The folder of the current cache format under a cache directory ("v2"; docs/cache-format.md)."""
    return "v" + str(json.loads(run(probe, "--no-self-test", "--json")[0])["cache_format_version"])


def device_block(table, device_id):
    """Returns the lines of one device's block in the inventory table."""
    lines = table.splitlines()
    start = lines.index(next(l for l in lines if l.startswith(f"  {device_id}  ")))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return block


def table_value(block, key):
    """Returns the value of the "    key   value" row of a device block."""
    for line in block:
        if line[4:].startswith(key + "  "):
            return line[4 + len(key):].strip()
    raise AssertionError(f"no '{key}' row in\n" + "\n".join(block))


def feature_checks(probe):
    """--features: one verdict per probed feature a device advertises, all passed on this machine's drivers."""
    out, _ = run(probe, "--json", "--no-self-test", "--features")
    d = json.loads(out)
    for dev in d["devices"]:
        checks = dev["feature_checks"]
        if not isinstance(checks, list):
            raise AssertionError(f"{dev['id']}: feature_checks is {checks!r}, not a list")
        probed = {"shader_float16", "shader_int8", "storage_buffer_16bit", "storage_buffer_8bit", "subgroup_arithmetic"}
        if sorted(c["feature"] for c in checks) != sorted(probed & set(dev["features"])):
            raise AssertionError(f"{dev['id']}: checked {checks} for features {dev['features']}")
        for c in checks:
            require(c, {"feature": str, "verdict": str, "note": str, "stored": bool}, dev["id"] + ".feature_checks")
            if c["verdict"] != "passed":
                raise AssertionError(f"{dev['id']}: {c['feature']} {c['verdict']}: {c['note']}")
    text, _ = run(probe, "--no-self-test", "--features")
    if "Feature checks:" not in text:
        raise AssertionError("no 'Feature checks:' section in the table:\n" + text)
    # A second process reads the first one's verdicts from the L2 cache instead of probing.
    if os.environ.get("VGPU_CACHE_DISABLE") != "1":
        lines = [l for l in text.splitlines() if ": passed" in l or ": wrong" in l or ": failed" in l]
        unstored = [l for l in lines if "(stored)" not in l]
        if unstored:
            raise AssertionError("verdicts probed again instead of read from the cache:\n" + "\n".join(unstored))


def inventory_json(probe):
    out, _ = run(probe, "--json")
    d = json.loads(out)
    require_schema(d, "inventory")
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
        if dev.get("feature_checks", 0) is not None:  # null without --features
            raise AssertionError(f"{dev['id']}: feature_checks is {dev.get('feature_checks', 'missing')}, not null")
        # Unknown is null, never 0; identity fields are present (null when the driver does not tell).
        require(dev, {"memory_bytes": OPT_INT, "compute_units": OPT_INT, "vendor_id": OPT_INT, "device_id": OPT_INT,
                      "device_uuid": OPT_STR, "driver_uuid": OPT_STR, "subgroup_size": OPT_INT}, dev["id"])
        for key in ("memory_bytes", "compute_units", "subgroup_size"):
            if dev[key] == 0:
                raise AssertionError(f"{dev['id']}.{key} is 0: unknown must be null")
        for key in ("device_uuid", "driver_uuid"):
            if dev[key] is not None and (len(dev[key]) != 32 or any(c not in "0123456789abcdef" for c in dev[key])):
                raise AssertionError(f"{dev['id']}.{key} = {dev[key]!r} is not 32 hex digits")
        if dev["backend"] == "cpu" and any(dev[k] is not None for k in ("vendor_id", "device_id", "device_uuid")):
            raise AssertionError(f"{dev['id']}: the CPU has no PCI or device identity, yet {dev}")
        if dev["backend"] == "vulkan" and (dev["vendor_id"] is None or dev["device_id"] is None
                                           or dev["device_uuid"] is None or dev["subgroup_size"] is None):
            raise AssertionError(f"{dev['id']}: Vulkan always tells vendor/device id, UUID and subgroup size: {dev}")
    # The table says "unknown" where the JSON says null, and the value where it has one.
    table, _ = run(probe, "--no-self-test")
    for dev in d["devices"]:
        block = device_block(table, dev["id"])
        for key, row in (("compute_units", "compute units"), ("subgroup_size", "subgroup size"),
                         ("device_uuid", "device uuid"), ("driver_uuid", "driver uuid")):
            want = "unknown" if dev[key] is None else str(dev[key])
            if table_value(block, row) != want:
                raise AssertionError(f"{dev['id']}: table row '{row}' is {table_value(block, row)!r}, JSON {dev[key]!r}")
        for key, row in (("vendor_id", "vendor id"), ("device_id", "device id")):
            want = "unknown" if dev[key] is None else f"0x{dev[key]:04x}"
            if table_value(block, row) != want:
                raise AssertionError(f"{dev['id']}: table row '{row}' is {table_value(block, row)!r}, JSON {dev[key]!r}")
        if dev["limits"]["max_shared_memory_bytes"] == 0 and table_value(block, "max shared memory") != "none":
            raise AssertionError(f"{dev['id']}: no shared memory (0) is not unknown, yet the table says "
                                 f"{table_value(block, 'max shared memory')!r}")
        if dev["memory_bytes"] is None and table_value(block, "memory") != "unknown":
            raise AssertionError(f"{dev['id']}: memory null in JSON but {table_value(block, 'memory')!r} in the table")


def select_json(probe):
    out, _ = run(probe, "select", "matmul", "64", "--json")
    s = json.loads(out)
    require_schema(s, "select")
    require(s, {"op": str, "shape": list, "size_class": int, "device": str, "source": str,
                "calibration_seconds": NUM, "lookup_seconds": NUM, "candidates": list}, "select")
    if s["shape"] != [64, 64, 64] or s["op"] != "matmul":
        raise AssertionError(f"select answered for {s['op']} {s['shape']}")
    if s["source"] not in ("calibrated", "persisted", "forced", "fallback", "only", "interim"):
        raise AssertionError(f"unknown source {s['source']}")
    for c in s["candidates"]:
        require(c, {"device": str, "eligible": bool, "seconds": NUM, "device_seconds": NUM, "runs": int,
                    "demoted": bool, "note": str, "check": str, "check_error": NUM}, "candidate")
        if c["device_seconds"] != 0:
            raise AssertionError(f"{c['device']} has a device time without device timing: {json.dumps(c)}")
        if c["check"] not in ("passed", "wrong", "unchecked"):
            raise AssertionError(f"unknown check {c['check']}")
        if c["check"] == "wrong" and c["eligible"]:
            raise AssertionError(f"{c['device']} computed a wrong result yet is eligible")
    if s["candidates"][0]["device"] != s["device"]:
        raise AssertionError("the chosen device is not the first candidate")
    # A calibrated choice was checked: its first result was right (issue 29).
    if s["source"] == "calibrated" and s["candidates"][0]["check"] != "passed":
        raise AssertionError(f"the chosen device's result was not checked: {json.dumps(s['candidates'][0])}")
    # Asked again in a new process, the choice comes from the selection cache.
    again = json.loads(run(probe, "select", "matmul", "60", "--json")[0])
    if again["device"] != s["device"] or again["source"] not in ("persisted", "only", "forced"):
        raise AssertionError(f"second process: {again['device']} [{again['source']}] after {s['device']}")
    # With VGPU_DEVICE_TIMING=1 every timed candidate also has the device's own time for its
    # dispatches, which is part of the call: more than nothing, at most the call's host time.
    env = dict(os.environ, VGPU_DEVICE_TIMING="1", VGPU_CACHE_DISABLE="1")
    p = subprocess.run([probe, "select", "matmul", "64", "--json"], capture_output=True, text=True, timeout=280, env=env)
    if p.returncode != 0:
        raise AssertionError(f"select with VGPU_DEVICE_TIMING=1 exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    timed = json.loads(p.stdout)
    measured = [c for c in timed["candidates"] if c["runs"] > 0]
    if not measured and timed["source"] == "calibrated":
        raise AssertionError(f"a calibration timed no candidate: {p.stdout[:600]}")
    for c in measured:
        if not 0 < c["device_seconds"] <= c["seconds"]:
            raise AssertionError(f"{c['device']}: device time {c['device_seconds']} s for a {c['seconds']} s call")
    if s["source"] not in ("calibrated", "persisted"):
        return  # one device, or forced: nothing is stored, so nothing to measure again or clear
    # --recalibrate measures every device again (never reads the stored choice) and stores it.
    redo = json.loads(run(probe, "select", "matmul", "64", "--recalibrate", "--json")[0])
    if redo["source"] != "calibrated" or not any(c["runs"] > 0 for c in redo["candidates"]):
        raise AssertionError(f"--recalibrate answered from '{redo['source']}':\n{json.dumps(redo)[:600]}")
    after = json.loads(run(probe, "select", "matmul", "64", "--json")[0])
    if after["source"] != "persisted" or after["device"] != redo["device"]:
        raise AssertionError(f"after --recalibrate: {after['device']} [{after['source']}], it chose {redo['device']}")
    # cache clear --selections forgets the choices and keeps the compiled kernels.
    before = json.loads(run(probe, "cache", "stats", "--json")[0])
    cleared = json.loads(run(probe, "cache", "clear", "--selections", "--json")[0])
    if cleared.get("only") != "selections" or cleared["removed"] < 1:
        raise AssertionError(f"cache clear --selections: {json.dumps(cleared)[:400]}")
    stats = json.loads(run(probe, "cache", "stats", "--json")[0])
    kinds = {k: v["entries"] for k, v in stats["kinds"].items()}
    kinds_before = {k: v["entries"] for k, v in before["kinds"].items()}
    if kinds.get(SELECT_KIND, 0) != 0 or kinds_before.get(SELECT_KIND, 0) == 0 or \
            {k: v for k, v in kinds.items() if k != SELECT_KIND} != {k: v for k, v in kinds_before.items() if k != SELECT_KIND}:
        raise AssertionError(f"after clear --selections: {kinds} (before: {kinds_before})")
    fresh = json.loads(run(probe, "select", "matmul", "64", "--json")[0])
    if fresh["source"] != "calibrated":
        raise AssertionError(f"after clear --selections the choice came from '{fresh['source']}'")


def bench_json(probe):
    out, err = run(probe, "bench", "--quick", "--json")
    if "vgpu-probe bench [1/" not in err:
        raise AssertionError(f"no progress lines on stderr:\n{err}")
    b = json.loads(out)
    require_schema(b, "bench")
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
    # Bad values in arguments are usage errors (2), like bad arguments; each says how to fix it.
    for args in (["select", "matmul", "64x"], ["select", "nope", "16"], ["select", "matmul", "16x16"],
                 ["bench", "--device", "vulkan:99"]):
        _, err = run(probe, *args, expect=2)
        if "Fix:" not in err:
            raise AssertionError(f"vgpu-probe {' '.join(args)}: no Fix hint in\n{err}")
        # With --json, stdout holds an error document too.
        out, _ = run(probe, *args, "--json", expect=2)
        e = json.loads(out)
        require_schema(e, "error document")
        require(e["error"], {"category": str, "message": str, "exit_code": int}, "error")
        if e["error"]["exit_code"] != 2 or e["error"]["category"] != "invalid_argument" or "Fix:" not in e["error"]["message"]:
            raise AssertionError(f"vgpu-probe {' '.join(args)} --json: error document {e}")
    run(probe, "select", "matmul", expect=2)  # SIZE missing: a usage error


def documented_codes(probe):
    """Returns the exit codes `vgpu-probe --help` documents."""
    out, _ = run(probe, "--help")
    text = out.split("Exit codes:\n", 1)[1]
    codes = []
    for line in text.splitlines():
        if not line.startswith("  ") or line.startswith("   "):
            if codes and not line.startswith("   "):
                break
            continue
        codes.append(int(line.split()[0]))
    return codes


def exit_codes(probe):
    """Runs one case of every exit code --help documents and checks the code."""
    codes = documented_codes(probe)
    if codes != [0, 1, 2, 3, 4]:
        raise AssertionError(f"--help documents exit codes {codes}; this test covers 0, 1, 2, 3, 4")
    work = tempfile.mkdtemp(prefix="probe-exit-")
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("VGPU_CACHE_DISABLE", "VGPU_DEVICE")}
        env["VGPU_CACHE_DIR"] = os.path.join(work, "cache")

        def code(*args, extra=None):
            p = subprocess.run([probe, *args], capture_output=True, text=True, timeout=280,
                               env={**env, **(extra or {})})
            return p.returncode, p.stdout + p.stderr

        cases = {
            0: [["--help"], ["--version"], ["--no-self-test"], ["cache", "stats"]],
            2: [["--bogus"], ["select"], ["cache"], ["cache", "stats", "extra"], ["select", "matmul", "0"],
                ["bench", "--device", "nope"]],
        }
        for want, runs in cases.items():
            for args in runs:
                got, out = code(*args)
                if got != want:
                    raise AssertionError(f"vgpu-probe {' '.join(args)} exited {got}, expected {want}\n{out}")
        # 1: `cache verify` finds a bad entry (a self-test failure cannot be caused from outside).
        spirv = os.path.join(work, "cache", format_folder(probe), "spirv")
        os.makedirs(spirv)
        with open(os.path.join(spirv, ENTRY_A), "w") as f:
            f.write("not an entry")
        got, out = code("cache", "verify")
        if got != 1 or "BAD" not in out:
            raise AssertionError(f"cache verify with a bad entry exited {got}, expected 1\n{out}")
        # 3: a vgpu error that is no bad argument: VGPU_DEVICE forces a device this machine lacks.
        got, out = code("select", "matmul", "64", extra={"VGPU_DEVICE": "vulkan:99"})
        if got != 3 or "Fix:" not in out:
            raise AssertionError(f"select with VGPU_DEVICE=vulkan:99 exited {got}, expected 3\n{out}")
        # 4 means a bug in vgpu-probe; there is no way to cause one from outside, so it is only documented.
        print("exit_codes: 4 (an unexpected error, a bug) has no trigger from outside; checked 0, 1, 2, 3")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def json_anywhere(probe):
    """--json before or after the subcommand prints the same JSON document."""
    work = tempfile.mkdtemp(prefix="probe-json-")
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("VGPU_CACHE_DISABLE",)}
        env["VGPU_CACHE_DIR"] = os.path.join(work, "cache")
        for sub in (["cache", "stats"], ["cache", "verify"], ["cache", "clear"], ["select", "matmul", "32"],
                    ["bench", "--quick", "--device", "cpu:0"]):
            docs = []
            positions = [["--json", *sub], [*sub, "--json"]]
            if sub[0] == "cache":
                positions.append(["cache", "--json", *sub[1:]])
            for args in positions:
                p = subprocess.run([probe, *args], capture_output=True, text=True, timeout=280, env=env)
                if p.returncode != 0:
                    raise AssertionError(f"vgpu-probe {' '.join(args)} exited {p.returncode}\n{p.stdout}{p.stderr}")
                try:
                    doc = json.loads(p.stdout)
                except json.JSONDecodeError:
                    raise AssertionError(f"vgpu-probe {' '.join(args)} printed no JSON:\n{p.stdout}") from None
                require_schema(doc, " ".join(args))
                docs.append(doc)
            if any(list(doc) != list(docs[0]) for doc in docs):
                raise AssertionError(f"{' '.join(sub)}: keys differ by --json position: {[list(d) for d in docs]}")
        d = json.loads(run(probe, "--no-self-test", "--json")[0])
        require_schema(d, "--no-self-test --json")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def vk_version(v):
    """Decodes a packed Vulkan version as vgpu does (VK_API_VERSION_MAJOR/MINOR/PATCH)."""
    return f"{(v >> 22) & 0x7f}.{(v >> 12) & 0x3ff}.{v & 0xfff}"


def vk_driver_version(vendor_id, v):
    """Decodes driverVersion: NVIDIA packs 10.8.8.6 bits, the others as an API version."""
    if vendor_id == 0x10DE:
        return f"{v >> 22}.{(v >> 14) & 0xff}.{(v >> 6) & 0xff}"
    return vk_version(v)


def vulkaninfo_devices(work):
    """Returns vulkaninfo's JSON (Vulkan Profiles form) for every GPU it lists."""
    summary = subprocess.run(["vulkaninfo", "--summary"], capture_output=True, text=True, timeout=120)
    count = sum(1 for line in summary.stdout.splitlines() if line.startswith("GPU") and line.rstrip().endswith(":"))
    found = []
    for gpu in range(count):
        folder = os.path.join(work, f"gpu{gpu}")
        os.makedirs(folder)
        # vulkan-tools 1.3.2xx writes the file named by -o (older ones: VP_VULKANINFO_*.json in the cwd).
        p = subprocess.run(["vulkaninfo", f"--json={gpu}", "-o", os.path.join(folder, "out.json")], cwd=folder,
                           capture_output=True, text=True, timeout=120)
        files = [f for f in os.listdir(folder) if f.endswith(".json")]
        if p.returncode != 0 or not files:
            raise AssertionError(f"vulkaninfo --json={gpu} exited {p.returncode}, wrote {files}\n{p.stdout}{p.stderr}")
        with open(os.path.join(folder, files[0])) as f:
            found.append(json.load(f)["capabilities"]["device"]["properties"])
    return found


def vulkaninfo(probe):
    """The probe's JSON for each Vulkan device agrees with `vulkaninfo --json` for the same device."""
    if shutil.which("vulkaninfo") is None:
        print("probe vulkaninfo: skipped: vulkaninfo is not installed (Debian: apt install vulkan-tools)")
        return
    d = json.loads(run(probe, "--no-self-test", "--json")[0])
    vk = [dev for dev in d["devices"] if dev["backend"] == "vulkan"]
    if not vk:
        print("probe vulkaninfo: skipped: vgpu found no Vulkan device here (see the backends' reasons)")
        return
    work = tempfile.mkdtemp(prefix="probe-vulkaninfo-")
    try:
        theirs = vulkaninfo_devices(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_uuid = {bytes(p["VkPhysicalDeviceIDProperties"]["deviceUUID"]).hex(): p for p in theirs}
    for dev in vk:
        p = by_uuid.get(dev["device_uuid"])
        if p is None:
            raise AssertionError(f"{dev['id']}: no vulkaninfo GPU has device UUID {dev['device_uuid']} "
                                 f"(vulkaninfo lists {sorted(by_uuid)})")
        props, limits = p["VkPhysicalDeviceProperties"], p["VkPhysicalDeviceProperties"]["limits"]
        ids = p["VkPhysicalDeviceIDProperties"]
        driver = p.get("VkPhysicalDeviceDriverProperties")
        checks = [
            ("name", dev["name"], props["deviceName"]),
            ("api_version", dev["api_version"], "Vulkan " + vk_version(props["apiVersion"])),
            ("driver_version", dev["driver_version"].split(" (")[0],
             vk_driver_version(props["vendorID"], props["driverVersion"])),
            ("vendor_id", dev["vendor_id"], props["vendorID"]),
            ("device_id", dev["device_id"], props["deviceID"]),
            ("driver_uuid", dev["driver_uuid"], bytes(ids["driverUUID"]).hex()),
            ("max_workgroup_size", dev["limits"]["max_workgroup_size"], limits["maxComputeWorkGroupSize"]),
            ("max_workgroup_count", dev["limits"]["max_workgroup_count"], limits["maxComputeWorkGroupCount"]),
            ("max_workgroup_invocations", dev["limits"]["max_workgroup_invocations"],
             limits["maxComputeWorkGroupInvocations"]),
            ("max_shared_memory_bytes", dev["limits"]["max_shared_memory_bytes"], limits["maxComputeSharedMemorySize"]),
            ("subgroup_size", dev["subgroup_size"], p["VkPhysicalDeviceSubgroupProperties"]["subgroupSize"]),
        ]
        if driver is not None:  # Vulkan 1.2 drivers: vgpu appends "(driverName driverInfo)"
            checks.append(("driver_version", dev["driver_version"],
                           f"{checks[2][2]} ({driver['driverName']} {driver['driverInfo']})"))
        wrong = [f"{k}: vgpu-probe {ours!r}, vulkaninfo {theirs_!r}" for k, ours, theirs_ in checks if ours != theirs_]
        if wrong:
            raise AssertionError(f"{dev['id']} disagrees with vulkaninfo:\n  " + "\n  ".join(wrong))
        print(f"probe vulkaninfo: {dev['id']} ({dev['name']}) agrees on {len(checks)} fields")


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
    v = format_folder(probe)  # the current format's folder, where the probe looks
    try:
        # 1. v<format> a symlink, and (in another cache) kind folders that are symlinks.
        outside = os.path.join(work, "outside")
        for kind in ("spirv", "glbin"):
            fill_outside(os.path.join(outside, kind))
        fill_outside(outside)
        before = snapshot(outside)
        c1 = os.path.join(work, "c1")
        os.makedirs(c1)
        os.symlink(outside, os.path.join(c1, v))
        c2 = os.path.join(work, "c2")
        os.makedirs(os.path.join(c2, v, "vkpc"))
        with open(os.path.join(c2, v, "vkpc", ENTRY_B), "w") as f:
            f.write("an entry-named file of this cache: clear deletes it")
        os.symlink(os.path.join(outside, "spirv"), os.path.join(c2, v, "spirv"))
        os.symlink(os.path.join(outside, "glbin"), os.path.join(c2, v, "glbin"))
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
        if os.path.exists(os.path.join(c2, v, "vkpc", ENTRY_B)):
            raise AssertionError("clear did not delete an entry-named file of the cache itself")
        if snapshot(outside) != before:
            raise AssertionError(f"files outside the cache changed:\nbefore {before}\nafter  {snapshot(outside)}")

        # 2. Non-files where entries belong: nothing hangs, everything is reported and kept.
        c3 = os.path.join(work, "c3")
        glbin = os.path.join(c3, v, "glbin")
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
        spirv = os.path.join(c4, v, "spirv")
        os.makedirs(spirv)
        for name in (ENTRY_A, ENTRY_B):
            with open(os.path.join(spirv, name), "w") as f:
                f.write("not a valid entry: verify --fix wants it gone")
        os.chmod(work, 0o755)
        user = NOBODY if os.geteuid() == 0 else None
        if user is None:
            for p in (c4, os.path.join(c4, v), spirv):
                os.chmod(p, 0o555)
        try:
            for args in (("clear",), ("verify", "--fix")):
                out = cache_run(probe, c4, *args, expect=1, user=user)
                require_in(out, ["LEFT ", "cannot delete it: Permission denied", "Fix: "],
                           f"{' '.join(args)} on a read-only cache")
        except PermissionError as e:
            print(f"cache_untrusted: skipping the read-only check: cannot run as uid {NOBODY} ({e})")
        finally:
            for p in (c4, os.path.join(c4, v), spirv):
                os.chmod(p, 0o755)
        for name in (ENTRY_A, ENTRY_B):
            os.lstat(os.path.join(spirv, name))

        require_in(run(probe, "--help")[0], ["cache clear"], "--help exit codes")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bundle_env(cache_dir):
    """The environment of a `cache export|import` run on cache_dir: CPU devices only (fast)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VGPU_CACHE_DISABLE", "VGPU_CACHE_MAX_BYTES",
                                                            "VGPU_DEVICE")}
    env.update(VGPU_CACHE_DIR=cache_dir, VGPU_BACKEND="cpu", VGPU_CPU_DEVICES="2")
    return env


def probe_run(probe, args, env, expect, stdout=subprocess.PIPE, preexec_fn=None):
    """Runs the probe with env (30 s: a hang fails); checks the exit code; returns the process."""
    try:
        p = subprocess.run([probe, *args], env=env, stdout=stdout, stderr=subprocess.PIPE, timeout=30,
                           preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"vgpu-probe {' '.join(args)} did not finish in 30 s (it hangs)") from None
    err = p.stderr.decode(errors="replace")
    if p.returncode != expect:
        out = p.stdout.decode(errors="replace") if isinstance(p.stdout, bytes) else ""
        raise AssertionError(f"vgpu-probe {' '.join(args)} exited {p.returncode}, expected {expect}\n{out}{err}")
    p.err = err
    return p


def filled_cache(probe, work):
    """A cache directory holding a few entries (device selections of the two CPU devices)."""
    cache = os.path.join(work, "cache")
    env = bundle_env(cache)
    probe_run(probe, ["select", "matmul", "64"], env, 0)
    entries = json.loads(probe_run(probe, ["cache", "stats", "--json"], env, 0).stdout)["entries"]
    if entries < 1:
        raise AssertionError(f"`select matmul 64` left {entries} entries in {cache}; the export checks need some")
    return cache, env, entries


def temp_leftovers(folder):
    """The export temp files (FILE.tmp-*) left in folder."""
    return [n for n in os.listdir(folder) if ".tmp-" in n]


def cache_export(probe):
    """`cache export FILE` never replaces what is not a regular file (exit 2, a Fix, the thing kept),
    writes `-` to stdout (a bundle that imports), keeps a replaced file's mode, gives a new one
    0666 less the umask, and leaves no temp file behind when writing fails."""
    work = tempfile.mkdtemp(prefix="probe-export-")
    try:
        cache, env, entries = filled_cache(probe, work)
        out = os.path.join(work, "out")
        os.makedirs(out)

        # 1. Things that are not regular files: refused before anything is written, and kept.
        fifo = os.path.join(out, "fifo")
        os.mkfifo(fifo)
        target = os.path.join(out, "target.vgb")
        with open(target, "wb") as f:
            f.write(b"the link's target")
        link = os.path.join(out, "link.vgb")
        os.symlink("target.vgb", link)
        folder = os.path.join(out, "folder")
        os.mkdir(folder)
        refused = {fifo: ("a FIFO", stat.S_ISFIFO), link: ("a symbolic link", stat.S_ISLNK),
                   folder: ("a directory", stat.S_ISDIR)}
        try:
            node = os.path.join(out, "null")
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers, in our folder
            refused[node] = ("a character device", stat.S_ISCHR)
        except PermissionError as e:
            print(f"cache_export: no character device of our own: mknod needs CAP_MKNOD ({e})")
        if not os.access("/dev", os.W_OK):
            # Only where /dev cannot be written: whatever the code does, /dev/null cannot be replaced.
            refused["/dev/null"] = ("a character device", stat.S_ISCHR)
        for path, (what, is_kind) in refused.items():
            p = probe_run(probe, ["cache", "export", path], env, 2)
            require_in(p.err, [path, what, "not a regular file", "Fix:"], f"export to {what}")
            if not is_kind(os.lstat(path).st_mode):
                raise AssertionError(f"export to {what} {path} changed it: {stat.filemode(os.lstat(path).st_mode)}")
            e = json.loads(probe_run(probe, ["cache", "export", path, "--json"], env, 2).stdout)
            require_schema(e, "error document")
            if e["error"]["exit_code"] != 2 or e["error"]["category"] != "invalid_argument":
                raise AssertionError(f"export to {what} --json: {e}")
        with open(target, "rb") as f:
            if f.read() != b"the link's target":
                raise AssertionError("export to a symlink changed the file it points to")
        if temp_leftovers(out):
            raise AssertionError(f"refused exports left temp files: {temp_leftovers(out)}")

        # 2. `-`: the bundle on stdout, the report on stderr; the bundle imports whole.
        bundle = os.path.join(work, "stdout.vgb")
        with open(bundle, "wb") as f:
            p = probe_run(probe, ["cache", "export", "-"], env, 0, stdout=f)
        require_in(p.err, [f"exported {entries} entr", "to standard output"], "export -")
        fresh = os.path.join(work, "fresh")
        doc = json.loads(probe_run(probe, ["cache", "import", bundle, "--json"], bundle_env(fresh), 0).stdout)
        if doc["imported"] != entries or doc["rejected"] != 0:
            raise AssertionError(f"the bundle export - wrote does not import whole ({entries} entries): {doc}")
        probe_run(probe, ["cache", "export", "-", "--json"], env, 2, stdout=subprocess.DEVNULL)
        with open("/dev/full", "wb") as full:  # a write error on stdout: exit 3 with a Fix
            p = probe_run(probe, ["cache", "export", "-"], env, 3, stdout=full)
        require_in(p.err, ["No space left on device", "Fix:"], "export - > /dev/full")

        # 3. Modes: a replaced file keeps its own, a new one gets 0666 less the umask.
        kept = os.path.join(out, "kept.vgb")
        with open(kept, "wb") as f:
            f.write(b"an old bundle")
        os.chmod(kept, 0o604)
        probe_run(probe, ["cache", "export", kept], env, 0)
        if stat.S_IMODE(os.stat(kept).st_mode) != 0o604:
            raise AssertionError(f"a replaced bundle has mode {oct(os.stat(kept).st_mode)}, not its old 0604")
        doc = json.loads(probe_run(probe, ["cache", "import", kept, "--json"], bundle_env(os.path.join(work, "f2")), 0)
                         .stdout)
        if doc["imported"] != entries:
            raise AssertionError(f"the replaced bundle does not import whole: {doc}")
        new = os.path.join(out, "new.vgb")
        probe_run(probe, ["cache", "export", new], env, 0, preexec_fn=lambda: os.umask(0o027))
        if stat.S_IMODE(os.stat(new).st_mode) != 0o640:
            raise AssertionError(f"a new bundle under umask 027 has mode {oct(os.stat(new).st_mode)}, not 0640")

        # 4. A write that fails (the file size limit, with SIGXFSZ ignored so write() says EFBIG):
        # exit 3 with a Fix, the old file untouched, no temp file left.
        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
        with open(kept, "rb") as f:
            before = f.read()
        p = probe_run(probe, ["cache", "export", kept], env, 3, preexec_fn=small_files)
        require_in(p.err, ["File too large", "Fix:"], "export with a 64-byte file size limit")
        with open(kept, "rb") as f:
            if f.read() != before:
                raise AssertionError("a failed export changed the existing bundle")
        if temp_leftovers(out):
            raise AssertionError(f"a failed export left its temp file: {temp_leftovers(out)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def xxh3_64(data):
    """XXH3_64bits(data), the bundle's checksum, from the libxxhash vgpu links."""
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def bundle_bytes(manifest, version=1):
    """A bundle of no payloads around manifest (a dict, or raw text), sealed with a valid checksum."""
    text = (manifest if isinstance(manifest, str) else json.dumps(manifest)).encode()
    return (b"VGPUBNDL" + struct.pack("<IIQQ", version, 0, len(text), xxh3_64(text)) + text)


def cache_import_errors(probe):
    """A bundle whose manifest has a field of the wrong JSON type, or of a newer version, is a bad
    FILE: exit 2 with a Fix (never 4, a bug), with --json an error document, and nothing imported."""
    work = tempfile.mkdtemp(prefix="probe-import-")
    try:
        good = {"format": "vgpu-cache-bundle", "bundle_version": 1, "cache_format": 2, "vgpu_version": "0.1.0",
                "entries": []}
        cases = {"format 0": (dict(good, format=0), "invalid_argument", "\"format\""),
                 "format null": (dict(good, format=None), "invalid_argument", "\"format\""),
                 "no format": ({k: v for k, v in good.items() if k != "format"}, "invalid_argument", "\"format\""),
                 "entries null": (dict(good, entries=None), "invalid_argument", "\"entries\""),
                 "cache_format text": (dict(good, cache_format="1"), "invalid_argument", "\"cache_format\""),
                 "an entry's size text": (dict(good, entries=[{"kind": "spirv", "key": "0" * 32, "fingerprint": "0" * 16,
                                                               "fingerprint_text": "x", "size": "4", "xxh3": "0" * 16,
                                                               "cost_us": 1}]), "invalid_argument", "\"size\""),
                 "a manifest array": ("[1, 2]", "invalid_argument", "not a JSON object"),
                 "version 2": (good, "not_supported", "newer")}
        for name, (manifest, category, words) in cases.items():
            bundle = os.path.join(work, "bad.vgb")
            with open(bundle, "wb") as f:
                f.write(bundle_bytes(manifest, version=2 if name == "version 2" else 1))
            target = os.path.join(work, "untouched")
            p = probe_run(probe, ["cache", "import", bundle], bundle_env(target), 2)
            require_in(p.err, [words, "Fix:", f"error ({category})"], f"import of a bundle with {name}")
            e = json.loads(probe_run(probe, ["cache", "import", bundle, "--json"], bundle_env(target), 2).stdout)
            require_schema(e, "error document")
            if e["error"]["exit_code"] != 2 or e["error"]["category"] != category:
                raise AssertionError(f"import of a bundle with {name} --json: {e}")
            if os.path.exists(target):
                raise AssertionError(f"a refused import ({name}) created the cache directory")
        # The good manifest itself imports (the cases above differ from it in one field each).
        with open(bundle, "wb") as f:
            f.write(bundle_bytes(good))
        probe_run(probe, ["cache", "import", bundle], bundle_env(os.path.join(work, "ok")), 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def list_devices(probe):
    """`list`: one line per device matching the inventory's ids in order, `--json` the same devices,
    `--device` filters (repeated or a comma list) and an unknown id is a usage error."""
    inventory = json.loads(run(probe, "--no-self-test", "--json")[0])
    ids = [d["id"] for d in inventory["devices"]]
    out, _ = run(probe, "list")
    lines = out.splitlines()
    if [line.split(": ", 1)[0] for line in lines] != ids:
        raise AssertionError(f"list printed\n{out}\nexpected one line per device in the inventory's order {ids}")
    for line, dev in zip(lines, inventory["devices"]):
        if dev["name"] not in line or f"({dev['type']}" not in line:
            raise AssertionError(f"list line '{line}' lacks the name or type of {dev}")
    doc = json.loads(run(probe, "list", "--json")[0])
    require_schema(doc, "list --json")
    for d in doc["devices"]:
        require(d, {"id": str, "name": str, "type": str, "backend": str, "api_version": str, "driver_version": str,
                    "device_uuid": OPT_STR}, "list device")
    if [d["id"] for d in doc["devices"]] != ids:
        raise AssertionError(f"list --json ids {[d['id'] for d in doc['devices']]}, expected {ids}")
    last = ids[-1]
    out, _ = run(probe, "list", "--device", last)
    if out.splitlines() != [lines[-1]]:
        raise AssertionError(f"list --device {last} printed\n{out}")
    if len(ids) >= 2:
        out, _ = run(probe, "list", "--device", f"{ids[-1]},{ids[0]}")
        if out.splitlines() != [lines[0], lines[-1]]:
            raise AssertionError(f"list --device {ids[-1]},{ids[0]} printed\n{out}")
    _, err = run(probe, "list", "--device", "cpu:99", expect=2)
    require_in(err, ["cpu:99", "Fix:", last], "list --device cpu:99")
    # The plain run takes --device too: only that device is listed and self-tested.
    doc = json.loads(run(probe, "--json", "--device", last)[0])
    if [d["id"] for d in doc["devices"]] != [last] or doc["devices"][0]["self_test"] is None:
        raise AssertionError(f"--device {last} --json: {[d['id'] for d in doc['devices']]}")
    run(probe, "--device", "nope:0", expect=2)


def read_only(probe):
    """The plain run (self-test included) and `list` leave an empty cache directory untouched."""
    work = tempfile.mkdtemp(prefix="probe-ro-")
    try:
        cache = os.path.join(work, "cache")
        env = {k: v for k, v in os.environ.items() if k not in ("VGPU_CACHE_DISABLE",)}
        env["VGPU_CACHE_DIR"] = cache
        for args in ([], ["--json"], ["list"], ["list", "--json"]):
            p = subprocess.run([probe, *args], capture_output=True, text=True, timeout=280, env=env)
            if p.returncode != 0:
                raise AssertionError(f"vgpu-probe {' '.join(args)} exited {p.returncode}\n{p.stdout}{p.stderr}")
            if os.path.exists(cache):
                written = [os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs]
                raise AssertionError(f"vgpu-probe {' '.join(args)} wrote the kernel cache: {written or cache}")
        # The cache is still used where that is the point: select keeps its choice.
        p = subprocess.run([probe, "select", "matmul", "32"], capture_output=True, text=True, timeout=280, env=env)
        if p.returncode != 0 or not os.path.isdir(cache):
            raise AssertionError(f"select matmul 32 kept nothing in {cache} (exit {p.returncode})\n{p.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def usage_json(probe):
    """Usage errors print an error document under --json wherever it stands; -V is --version."""
    for args in (["--bogus", "--json"], ["--json", "select"], ["cache", "stats", "extra", "--json"],
                 ["list", "--json", "--nope"]):
        out, err = run(probe, *args, expect=2)
        try:
            e = json.loads(out)
        except json.JSONDecodeError:
            raise AssertionError(f"vgpu-probe {' '.join(args)}: no JSON error document on stdout:\n{out}") from None
        require_schema(e, "usage error document")
        require(e["error"], {"category": str, "message": str, "exit_code": int}, "usage error")
        if e["error"]["category"] != "usage" or e["error"]["exit_code"] != 2 or not e["error"]["message"]:
            raise AssertionError(f"vgpu-probe {' '.join(args)}: error document {e}")
        if not err.strip():
            raise AssertionError(f"vgpu-probe {' '.join(args)}: the usage error is not on stderr too")
    out, _ = run(probe, "--bogus", expect=2)
    if out.strip():
        raise AssertionError(f"without --json a usage error printed on stdout:\n{out}")
    short, _ = run(probe, "-V")
    long, _ = run(probe, "--version")
    if short != long or not short.startswith("vgpu-probe "):
        raise AssertionError(f"-V printed {short!r}, --version {long!r}")


CHECKS = ("inventory_json", "feature_checks", "select_json", "bench_json", "errors", "exit_codes", "json_anywhere",
          "vulkaninfo", "cache_untrusted", "cache_export", "cache_import_errors", "list_devices", "read_only", "usage_json")

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
    print(f"probe {sys.argv[1]}: ok")
