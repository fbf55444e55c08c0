# SPDX-License-Identifier: Apache-2.0
"""`python3 -m vgpu` prints the probe's table, `--json` its JSON; --help; a bad flag exits 2."""
import json
import os
import subprocess
import sys

import vgpu


def run(*args):
    return subprocess.run([sys.executable, "-m", "vgpu", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)


def test_table():
    r = run()
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"vgpu {vgpu.__version__} (cache format ")
    assert "\nBackends\n  name    compiled-in  available  reason\n" in out
    for s in vgpu.backends():
        assert f"\n  {s.name:<8}" in out
    infos = vgpu.devices()
    assert f"\nDevices ({len(infos)})\n" in out
    for i in infos:
        assert f"\n  {i.id}  {i.name}\n" in out
        assert i.fingerprint in out
    assert out == vgpu.inventory()


def test_json_has_the_probes_keys():
    r = run("--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert list(d) == ["schema", "version", "cache_format_version", "backends", "devices"]
    assert d["schema"] == 1
    assert d["version"] == vgpu.__version__
    assert [b["name"] for b in d["backends"]] == [s.name for s in vgpu.backends()]
    for b in d["backends"]:
        assert list(b) == ["name", "compiled_in", "available", "reason"]
    assert [x["id"] for x in d["devices"]] == [i.id for i in vgpu.devices()]
    for x in d["devices"]:
        assert list(x) == ["id", "backend", "index", "name", "type", "vendor", "driver_version", "api_version",
                           "memory_bytes", "compute_units", "vendor_id", "device_id", "device_uuid", "driver_uuid",
                           "subgroup_size", "limits", "features", "dialects", "fingerprint", "self_test",
                           "feature_checks"]
        assert x["self_test"] is None and x["feature_checks"] is None and len(x["fingerprint"]["hex"]) == 16
    # The attributes say None where the JSON says null (unknown), and the same value otherwise.
    infos = {i.id: i for i in vgpu.devices()}
    for x in d["devices"]:
        for key in ("memory_bytes", "compute_units", "vendor_id", "device_id", "device_uuid", "driver_uuid",
                    "subgroup_size"):
            assert getattr(infos[x["id"]], key) == x[key], (x["id"], key)


def test_help():
    r = run("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: python3 -m vgpu")
    assert "--json" in r.stdout


def test_bad_flag_exits_2_with_usage():
    r = run("--bogus")
    assert r.returncode == 2
    assert r.stderr.startswith("usage: python3 -m vgpu") and "--bogus" in r.stderr
    assert r.stdout == ""
