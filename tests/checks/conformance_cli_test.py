# SPDX-License-Identifier: Apache-2.0
"""conformance.cli: vgpu-conformance's own options for driver validators (docs/conformance.md).

  --device cpu:0 --junit FILE  writes JUnit XML (parsed with xml.etree) with test cases and no failures
  --list                       names cpu:0 and the test cases, exits 0
  --device nope:9              exits 2 with the available ids and a Fix: hint
  "[.runner-check]"            two hidden cases that fail on purpose: exits 1 (not the count, 2)
  a filter matching nothing    exits 2 with a Fix: hint (nothing ran is no pass)
  an option Catch refuses      exits 2 (not Catch's 255)
  --device cpu:0,<another> --junit FILE   one <testsuite>/<testcase> per (case, device), the host name,
                               <skipped> with why where a case has nothing to run on a device

usage: conformance_cli_test.py VGPU_CONFORMANCE WORK_DIR
"""
import os
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET


def run(args):
    env = dict(os.environ)
    env.pop("VGPU_TEST_BACKENDS", None)  # --device alone picks the devices
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=550)
    print("$ %s -> %d\n%s%s" % (" ".join(args), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def main():
    exe, work = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    junit = os.path.join(work, "out.xml")

    p = run([exe, "--device", "cpu:0", "--junit", junit])
    assert p.returncode == 0, "the cpu:0 run failed"
    assert "testing cpu:0" in p.stdout and "vulkan:" not in p.stdout.split("exercised devices:")[-1], p.stdout
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    assert suites, "no <testsuite> in " + junit
    cases = root.findall(".//testcase")
    assert cases, "no <testcase> in " + junit
    failures = sum(int(s.get("failures", "0")) + int(s.get("errors", "0")) for s in suites)
    assert failures == 0 and not root.findall(".//failure") and not root.findall(".//error"), "failures in the XML"
    print("junit: %d test cases, 0 failures" % len(cases))

    p = run([exe, "--list"])
    assert p.returncode == 0, "--list did not exit 0"
    assert "cpu:0" in p.stdout and "at least one device is exercised" in p.stdout, p.stdout

    p = run([exe, "--device", "nope:9"])
    assert p.returncode == 2, "an unknown device did not exit 2"
    assert "nope:9" in p.stderr and "cpu:0" in p.stderr and "Fix:" in p.stderr, p.stderr

    # Exit codes are 0, 1, 2 and 77 only: two failed cases (the hidden ones that fail on purpose)
    # exit 1, not 2; a filter that matches nothing ran nothing, which is an error (2), not a pass;
    # an option Catch refuses is a bad argument (2), not Catch's 255.
    p = run([exe, "--device", "cpu:0", "[.runner-check]"])
    assert p.returncode == 1, "two failed cases exited %d, not 1" % p.returncode
    assert "runner check" in p.stdout, "the hidden failing cases did not run"
    p = run([exe, "--device", "cpu:0", "no case has this name"])
    assert p.returncode == 2, "a filter that matches nothing exited %d, not 2" % p.returncode
    assert "no test case ran" in p.stderr and "Fix:" in p.stderr, p.stderr
    p = run([exe, "--device", "cpu:0", "--no-such-catch-option"])
    assert p.returncode == 2, "an option Catch refuses exited %d, not 2" % p.returncode
    p = run([exe, "--list"])
    assert "runner check" not in p.stdout, "--list shows the hidden failing cases"
    per_device_junit(exe, work)
    print("PASS")


def per_device_junit(exe, work):
    """--junit with several devices: one <testsuite> and one <testcase> per (case, device), named by the
    device, the real host name, <skipped> with its reason where a case has nothing to run on a device,
    and a failure reported under the device it happened on."""
    ids = [line.split()[0] for line in run([exe, "--list"]).stdout.splitlines()
           if line.startswith("  ") and ":" in line.split()[0] and not line.strip().startswith("(")]
    devices = ["cpu:0"] + [d for d in ids if d != "cpu:0"][:1]  # CI: cpu:0 and vulkan:0
    junit = os.path.join(work, "per-device.xml")
    cpu_only = "user CPU kernel: 2-D workgroups see the right ids and grid"
    everywhere = "every device under test describes itself"
    p = run([exe, "--device", ",".join(devices), "--junit", junit, f"{cpu_only},{everywhere}"])
    assert p.returncode == 0, "the per-device JUnit run failed"
    root = ET.parse(junit).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["vgpu-conformance." + d for d in devices], [s.get("name") for s in suites]
    host = socket.gethostname()
    for suite, device in zip(suites, devices):
        assert suite.get("hostname") == host, f"hostname {suite.get('hostname')!r}, not {host!r}"
        cases = {c.get("name"): c for c in suite.findall("testcase")}
        assert set(cases) == {cpu_only, everywhere}, f"{device}: test cases {sorted(cases)}"
        assert all(c.get("classname") == "vgpu-conformance." + device for c in cases.values())
        skipped = cases[cpu_only].find("skipped")
        if device == "cpu:0":
            assert skipped is None, "the CPU-only case is marked skipped on cpu:0"
        else:
            assert skipped is not None and "CPU devices only" in skipped.get("message", ""), \
                f"{device}: the CPU-only case is not skipped with its reason"
            assert suite.get("skipped") == "1"
        assert cases[everywhere].find("skipped") is None and cases[everywhere].find("failure") is None
    # A failure is reported under the device it happened on, and the run exits 1.
    p = run([exe, "--device", ",".join(devices), "--junit", junit, "[.runner-check]"])
    assert p.returncode == 1, "failing cases with --junit exited %d, not 1" % p.returncode
    root = ET.parse(junit).getroot()
    for suite in root.findall("testsuite"):
        assert suite.findall(".//failure"), f"{suite.get('name')}: the failing cases report no <failure>"
    print("junit per device: %s, the CPU-only case skipped elsewhere with its reason" % ", ".join(devices))


if __name__ == "__main__":
    main()
