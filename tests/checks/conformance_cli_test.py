# SPDX-License-Identifier: Apache-2.0
"""conformance.cli: vgpu-conformance's own options for driver validators (docs/conformance.md).

  --device cpu:0 --junit FILE  writes JUnit XML (parsed with xml.etree) with test cases and no failures
  --list                       names cpu:0 and the test cases, exits 0
  --device nope:9              exits 2 with the available ids and a Fix: hint
  "[.runner-check]"            two hidden cases that fail on purpose: exits 1 (not the count, 2)
  a filter matching nothing    exits 2 with a Fix: hint (nothing ran is no pass)
  an option Catch refuses      exits 2 (not Catch's 255)

usage: conformance_cli_test.py VGPU_CONFORMANCE WORK_DIR
"""
import os
import shutil
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
    print("PASS")


if __name__ == "__main__":
    main()
