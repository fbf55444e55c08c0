#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/checks/probe_docs_test.py — vgpu-probe's man page and bash completion, as built and as
installed.

    probe_docs_test.py PROBE BUILD_DIR CMAKE

Every subcommand path and every option that `PROBE ... --help` lists must be in the man page
(BUILD_DIR/share/man/man1/vgpu-probe.1, made by help2man at build time) and be offered by the
completion (BUILD_DIR/share/bash-completion/completions/vgpu-probe, run in bash with simulated
COMP_WORDS); after --device the completion offers the ids `PROBE list` prints. Then `cmake
--install` into a temporary prefix must put both under share/. Exits 77 (a reported skip)
when the build made no man page because help2man is missing, saying so.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "probe"))
import cli_docs  # noqa: E402  (the generator's own help parser: the test checks its output, not its parsing)


def complete(script, words):
    """COMPREPLY of _vgpu_probe for the command line words (the last one is being completed)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _vgpu_probe; " \
              "printf '%s\\n' \"${COMPREPLY[@]}\""
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, timeout=120).stdout
    return set(out.split())


def main():
    probe, build, cmake = sys.argv[1:4]
    man = os.path.join(build, "share", "man", "man1", "vgpu-probe.1")
    completion = os.path.join(build, "share", "bash-completion", "completions", "vgpu-probe")
    if not os.path.exists(completion):
        raise AssertionError(f"no bash completion at {completion}: the vgpu-probe-docs target did not run")
    tree = list(cli_docs.walk(probe))
    if len(tree) < 8:
        raise AssertionError(f"the --help walk found {len(tree)} commands; expected the program and its subcommands")
    for path, (_, _, options, subcommands, _) in tree:
        offered = complete(completion, [probe, *path, ""])
        wanted = set(cli_docs.option_words(options)) | {names for names, _ in subcommands}
        if not wanted <= offered:
            raise AssertionError(f"completing 'vgpu-probe {' '.join(path)} ' misses {sorted(wanted - offered)}")
    if complete(completion, [probe, "--dev"]) != {"--device"}:
        raise AssertionError("'vgpu-probe --dev' does not complete to --device")
    if "matmul" not in complete(completion, [probe, "select", "mat"]):
        raise AssertionError("'vgpu-probe select mat' does not complete to matmul")
    ids = {line.split(": ", 1)[0] for line in subprocess.run([probe, "list"], capture_output=True, text=True,
                                                              check=True, timeout=120).stdout.splitlines()}
    got = complete(completion, [probe, "bench", "--device", ""])
    if not ids or got != ids:
        raise AssertionError(f"after --device the completion offers {sorted(got)}, `vgpu-probe list` has {sorted(ids)}")
    print(f"completion: {len(tree)} commands, their options and subcommands, device ids {sorted(ids)}")

    if not os.path.exists(man):
        print(f"skipped: no man page at {man}: help2man was not found when the build was configured "
              "(Fix: apt-get install help2man, then configure again)")
        return 77
    text = open(man, encoding="utf-8").read()
    if not text.startswith(".\\\" DO NOT MODIFY THIS FILE!") or '.TH VGPU-PROBE "1"' not in text:
        raise AssertionError(f"{man} is not a help2man page of section 1:\n{text[:300]}")
    for path, (_, _, options, _, _) in tree:
        if path and ".SS " + " ".join(path) not in text:
            raise AssertionError(f"the man page has no section for 'vgpu-probe {' '.join(path)}'")
        for word in cli_docs.option_words(options):
            if word not in text.replace("\\-", "-"):
                raise AssertionError(f"the man page does not mention {word} (of 'vgpu-probe {' '.join(path)}')")
    print(f"man page: {len(tree) - 1} subcommand sections and every option")

    prefix = tempfile.mkdtemp(prefix="probe-docs-install-")
    try:
        p = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise AssertionError(f"cmake --install {build} failed:\n{p.stdout}{p.stderr}")
        for rel in ("share/man/man1/vgpu-probe.1", "share/bash-completion/completions/vgpu-probe"):
            if not os.path.isfile(os.path.join(prefix, rel)):
                raise AssertionError(f"cmake --install did not install {rel}")
        print("installed: share/man/man1/vgpu-probe.1, share/bash-completion/completions/vgpu-probe")
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main())
