# SPDX-License-Identifier: Apache-2.0
"""vgpu's log reaches Python's logging (logger "vgpu") from the moment the module is imported, from
any thread, at the level set_log_level chooses; log_to_stderr sends it back to C-level stderr."""
import os
import subprocess
import sys
import textwrap

import pytest

import vgpu

# Captures every record of the "vgpu" logger, then runs the body; prints one line per record.
PRELUDE = textwrap.dedent("""
    import logging, sys, threading
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append((record.levelname, record.getMessage().replace(chr(10), " "), threading.current_thread().name))
    logger = logging.getLogger("vgpu")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Keep())
    logger.propagate = False
    import vgpu
""")
# Lines logged on other threads are handed over at the main thread's next bytecode boundary (a
# pending call): a few bytecodes run before the records are printed.
EPILOGUE = textwrap.dedent("""
    for _ in range(100):
        pass
    for level, message, thread in records:
        print(f"{level}|{thread}|{message}")
""")


def run(body, **env):
    full_env = {k: v for k, v in os.environ.items() if k != "VGPU_LOG"}
    full_env.update(env)
    code = PRELUDE + textwrap.dedent(body) + EPILOGUE
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # (level, message, thread that handed it to logging) per record
    records = [(p[0], p[2], p[1]) for p in (line.split("|", 2) for line in r.stdout.splitlines()) if len(p) == 3]
    return records, r.stderr


def test_a_warning_goes_to_the_vgpu_logger_not_stderr():
    # An unknown VGPU_ variable is warned about when vgpu first reads its configuration.
    records, err = run("vgpu.devices()", VGPU_NO_SUCH_SETTING="1")
    warnings = [m for level, m, _ in records if level == "WARNING" and "VGPU_NO_SUCH_SETTING" in m]
    assert len(warnings) == 1, records
    assert "Fix:" in warnings[0]
    assert "VGPU_NO_SUCH_SETTING" not in err, f"the warning reached C-level stderr too:\n{err}"


def test_set_log_level_lets_debug_lines_through():
    quiet, _ = run("vgpu.devices()")
    assert not [r for r in quiet if r[0] == "DEBUG"], quiet
    loud, _ = run("vgpu.set_log_level('debug'); vgpu.devices()")
    assert [r for r in loud if r[0] == "DEBUG"], "set_log_level('debug') let no debug line through"
    numeric, _ = run("import logging; vgpu.set_log_level(logging.DEBUG); vgpu.devices()")
    assert [r for r in numeric if r[0] == "DEBUG"]


def test_lines_logged_on_other_threads_arrive():
    # Each thread opens the runtime's devices; the debug lines are logged on those threads and
    # handed to Python on the main thread, none lost.
    body = """
        vgpu.set_log_level('debug')
        threads = [threading.Thread(target=vgpu.devices, name=f"t{i}") for i in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
    """
    records, _ = run(body)
    assert [r for r in records if r[0] == "DEBUG"], records


def test_log_to_stderr_restores_c_level_stderr():
    records, err = run("vgpu.log_to_stderr(); vgpu.devices()", VGPU_NO_SUCH_SETTING="1")
    assert not [r for r in records if "VGPU_NO_SUCH_SETTING" in r[1]], records
    assert "vgpu: warning:" in err and "VGPU_NO_SUCH_SETTING" in err, err


def test_a_bad_level_says_how_to_fix_it():
    with pytest.raises(ValueError, match="Fix:"):
        vgpu.set_log_level("loud")
