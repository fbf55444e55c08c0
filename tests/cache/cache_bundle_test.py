# SPDX-License-Identifier: Apache-2.0
"""cache_bundle.round_trip: a warmed cache, exported with `vgpu-probe cache export`, imported
with `vgpu-probe cache import` into an EMPTY directory, lets a fresh process run the same calls
with 0 source compiles (all L2 hits) and a persisted selection. The same check against a
directory the import did not fill must fail, so a no-op import cannot pass.

usage: cache_bundle_test.py VGPU_PROBE VGPU_BUNDLE_WARM WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def run(args, cache_dir, expect=0):
    env = dict(os.environ, VGPU_CACHE_DIR=cache_dir)
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=500)
    print("$ VGPU_CACHE_DIR=%s %s -> %d\n%s%s" % (cache_dir, " ".join(args), p.returncode, p.stdout, p.stderr))
    if expect is not None and p.returncode != expect:
        sys.exit("FAIL: %s exited %d, expected %d" % (args[0], p.returncode, expect))
    return p


def main():
    probe, warm, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    src, dst, empty = (os.path.join(work, d) for d in ("src", "dst", "empty"))
    bundle = os.path.join(work, "cache.vgb")
    os.makedirs(src)

    run([warm, "warm"], src)
    exported = json.loads(run([probe, "cache", "export", bundle, "--json"], src).stdout)
    assert list(exported)[0] == "schema" and exported["schema"] == 1, exported
    assert exported["exported"] > 0 and exported["skipped"] == 0, exported

    imported = json.loads(run([probe, "cache", "import", bundle, "--json"], dst).stdout)
    assert list(imported)[0] == "schema" and imported["schema"] == 1, imported
    assert imported["imported"] == exported["exported"] and imported["rejected"] == 0, imported

    check = run([warm, "check"], dst)
    gpu = "SKIPPED gpu:" not in check.stdout
    # The control: the same check on a cache that holds nothing must fail (needs a GPU device
    # or a second device for the selection; else say why it cannot).
    os.makedirs(empty)
    control = run([warm, "check"], empty, expect=None)
    if control.returncode == 0:
        print("SKIPPED control: this machine has no run-time compiled device and a single device, so an empty "
              "cache passes the check too")
    elif control.returncode != 3:
        sys.exit("FAIL: the control run exited %d" % control.returncode)

    # A bad bundle is a bad FILE argument: exit 2 with a Fix hint, nothing written.
    bad = os.path.join(work, "bad.vgb")
    with open(bad, "wb") as f:
        f.write(b"NOTABNDL" + b"\0" * 40)
    p = run([probe, "cache", "import", bad], os.path.join(work, "untouched"), expect=2)
    assert "Fix:" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(work, "untouched")), "a refused import created the cache directory"
    p = run([probe, "cache", "import"], dst, expect=2)
    print("PASS (gpu devices checked: %s)" % ("yes" if gpu else "no"))


if __name__ == "__main__":
    main()
