# SPDX-License-Identifier: Apache-2.0
"""`python3 -m vgpu`: prints the backends and devices vgpu finds, as `vgpu-probe --no-self-test`
does (the same table; --json: the same JSON object). Exit codes: 0 ok, 2 usage error, 3 a vgpu
error (its message ends in a Fix: hint)."""
import sys

USAGE = "usage: python3 -m vgpu [--json] [--help]"
HELP = f"""{USAGE}

List vgpu's backends (with why each unavailable one is) and devices, as vgpu-probe prints
them without its self-tests.

options:
  --json   print one JSON object on stdout: schema (1, docs/probe.md), version,
           cache_format_version, backends, devices
  --help   show this help and exit

Environment: VGPU_BACKEND, a comma list of the backends' names as listed, limits the backends
probed; VGPU_LOG sets the stderr log level."""


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if "-h" in args or "--help" in args:
        print(HELP)
        return 0
    bad = [a for a in args if a != "--json"]
    if bad:
        print(USAGE, file=sys.stderr)
        print(f"python3 -m vgpu: error: unrecognized argument{'s' if len(bad) > 1 else ''}: {' '.join(bad)}",
              file=sys.stderr)
        return 2
    import vgpu
    try:
        text = vgpu.inventory(json="--json" in args)
    except vgpu.Error as e:
        print(f"python3 -m vgpu: error ({e.category}): {e}", file=sys.stderr)
        return 3
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
