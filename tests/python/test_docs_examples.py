# SPDX-License-Identifier: Apache-2.0
"""docs/python.md stays true: every ```python block of it runs with the built module.

Conventions (docs/python.md, "Tests", says the same):
- one pytest case per block, named by the line of its opening fence; a block that raises fails
  naming that line (its traceback shows the page's own line numbers);
- the blocks of one `##` section run in order in one namespace (a block may use what an earlier
  block of its section defined); each `##` section starts with a fresh namespace and its own
  temporary working directory;
- a first line `# not run: <reason>` marks a block that must not run here: it is compiled (a
  syntax check) and skipped with that reason;
- a first line `# needs: a, b` skips the block, with the reason, unless each item is available:
  a kernel dialect (glsl, glsl_shader, spirv, cuda, cpu) that some device of vgpu.devices()
  compiles, or else a program on PATH;
- other fences (sh, text, ...) are never run; a python-like fence other than exactly ```python
  fails the test, so that no example is silently left out.
"""
import os
import re
import shutil
import traceback
from pathlib import Path

import pytest

import vgpu

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
DIALECTS = {"glsl", "glsl_shader", "spirv", "cuda", "cpu"}
FENCE = re.compile(r"^(\s*)```+\s*([^\s`]*)")


class Block:
    def __init__(self, line, section, code):
        self.line = line  # 1-based line of the opening fence
        self.section = section
        self.code = code
        first = code.lstrip("\n").splitlines()[0].strip() if code.strip() else ""
        self.not_run = first[len("# not run:"):].strip() if first.startswith("# not run:") else None
        self.needs = ([n.strip() for n in first[len("# needs:"):].split(",") if n.strip()]
                      if first.startswith("# needs:") else [])

    def label(self):
        return f"docs/python.md:{self.line}"


def parse(text):
    blocks, bad = [], []
    section = "(top)"
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            lang = m.group(2)
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                body.append(lines[i])
                i += 1
            if lang == "python":
                # Pad with blank lines so that line numbers in tracebacks are the page's.
                blocks.append(Block(start + 1, section, "\n" * (start + 1) + "\n".join(body) + "\n"))
            elif lang.lower() in ("py", "python3", "pycon", "pyi") or lang.lower().startswith("python"):
                bad.append(f"line {start + 1}: ```{lang}")
        elif line.startswith("## "):
            section = line[3:].strip()
        i += 1
    return blocks, bad


BLOCKS, BAD_FENCES = parse(DOC.read_text(encoding="utf-8"))


def test_page_has_examples_and_only_python_fences():
    assert not BAD_FENCES, f"use ```python for examples (or another language that is not run): {BAD_FENCES}"
    assert len(BLOCKS) >= 10, f"docs/python.md has only {len(BLOCKS)} python blocks"
    for b in BLOCKS:
        assert b.not_run is None or b.not_run, f"{b.label()}: '# not run:' needs a reason"


_available_dialects = None


def missing_needs(block):
    global _available_dialects
    missing = []
    for need in block.needs:
        if need in DIALECTS:
            if _available_dialects is None:
                _available_dialects = {d for info in vgpu.devices() for d in info.dialects}
            if need not in _available_dialects:
                missing.append(f"no device here compiles {need}")
        elif shutil.which(need) is None:
            missing.append(f"{need} is not on PATH")
    return missing


class SectionState:
    def __init__(self, directory):
        self.namespace = {"__name__": "__docs_example__"}
        self.directory = directory
        self.done = set()  # lines of the blocks that ran (or were skipped)
        self.failed = None  # label of the block that failed


_sections = {}


def run_block(block, state):
    code = compile(block.code, str(DOC), "exec")
    if block.not_run is not None:
        return f"{block.label()}: not run: {block.not_run}"
    missing = missing_needs(block)
    if missing:
        return f"{block.label()}: needs {', '.join(block.needs)}: {'; '.join(missing)}"
    cwd = os.getcwd()
    os.chdir(state.directory)
    try:
        exec(code, state.namespace)
    except Exception as e:
        state.failed = block.label()
        # The example's own frames only (their lines are the page's), not the whole page as
        # pytest's long traceback of a module-level frame would print it.
        where = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
        raise AssertionError(f"the example at {block.label()} (section '{block.section}') raised "
                             f"{type(e).__name__}:\n{where}") from None
    finally:
        os.chdir(cwd)
    return None


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{b.line}" for b in BLOCKS])
def test_example(block, tmp_path_factory):
    state = _sections.get(block.section)
    if state is None:
        state = _sections[block.section] = SectionState(tmp_path_factory.mktemp("docs-example"))
    # Run the earlier blocks of the section first when this case runs alone (pytest -k).
    for earlier in BLOCKS:
        if earlier is block:
            break
        if earlier.section == block.section and earlier.line not in state.done and state.failed is None:
            run_block(earlier, state)
            state.done.add(earlier.line)
    if state.failed is not None:
        pytest.skip(f"{block.label()}: an earlier block of section '{block.section}' failed ({state.failed})")
    skipped = run_block(block, state)
    state.done.add(block.line)
    if skipped:
        pytest.skip(skipped)
