#!/usr/bin/env python3
"""tests/probe_cli_test.py — checks vgpu-probe's JSON outputs and exit codes.

    probe_cli_test.py <check> <path-to-vgpu-probe>

check is one of inventory_json, select_json, bench_json, errors. Each JSON output is parsed
and its required fields are checked for presence and type; a failed check raises (exit 1)
with what was wrong and the probe's output.
"""
import json
import subprocess
import sys


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


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inventory_json", "select_json", "bench_json", "errors"):
        sys.exit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
    print(f"probe {sys.argv[1]}: ok")
