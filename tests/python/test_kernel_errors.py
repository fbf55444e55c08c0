# SPDX-License-Identifier: Apache-2.0
"""Bad kernels and bad calls raise clearly (a vgpu.Error subclass whose message ends with a Fix
hint), and the same device and kernel still work afterwards."""
import gc

import numpy as np
import pytest

import vgpu
from kernel_devices import backend, device  # noqa: F401 — the fixture
from test_user_kernels import BODY, cpu_body, params, tensors

BAD_GLSL = """
VGPU_PARAMS { uint n; float a; float b; uint pad; } p;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
void main() {
  y[0] = undeclared_name;
}
"""


def assert_fix(e):
    assert "Fix:" in str(e), str(e)
    assert e.value.fix if hasattr(e, "value") else True


def still_works(dev):
    k = vgpu.PersistentKernel("add", (33,), device=dev)
    a = np.arange(33, dtype=np.float32)
    np.testing.assert_array_equal(k(a, a), 2 * a)


def gpu_only(dev):
    if backend(dev) not in ("vulkan", "opengl"):
        pytest.skip(f"{dev}: the CPU and CUDA devices run no GLSL/SPIR-V")


def test_glsl_syntax_error_is_compile_error_with_log(device):
    gpu_only(device)
    with pytest.raises(vgpu.CompileError) as e:
        vgpu.PersistentKernel(name="broken", glsl=BAD_GLSL, tensors=tensors(4), groups=(1,), params=params(4, 1, 0),
                              device=device)
    assert "undeclared_name" in str(e.value)
    assert str(e.value).rstrip().split("Fix:")[-1].strip() and "Fix:" in str(e.value)
    assert e.value.category == "compile_error" and e.value.fix
    still_works(device)


@pytest.mark.parametrize("words", [b"\x03\x02\x23\x07" + b"\x00" * 16, b"\x01\x02\x03", b""])
def test_bad_spirv_bytes(device, words):
    gpu_only(device)
    with pytest.raises((vgpu.CompileError, vgpu.InvalidArgument)) as e:
        vgpu.PersistentKernel(name="bad_spirv", spirv=words, tensors=tensors(4), groups=(1,), device=device)
    assert "Fix:" in str(e.value)
    if len(words) % 4 or not words:
        assert isinstance(e.value, vgpu.InvalidArgument)
    still_works(device)


def test_wrong_calls_leave_the_kernel_usable(device):
    k = vgpu.PersistentKernel("matmul", (4, 5, 6), device=device)
    A = np.ones((4, 5), np.float32)
    B = np.ones((5, 6), np.float32)
    cases = [
        ((A,), {}),                                            # too few
        ((A, B, np.empty((4, 6), np.float32), A), {}),         # too many
        ((A, np.ones((6, 5), np.float32)), {}),                # wrong shape
        ((A, np.ones((5, 6), np.complex64)), {}),              # refused dtype
        ((A, np.ones((5, 6), bool)), {}),                      # bool
        ((A, B), {"out": np.empty((4, 6), np.float64)}),       # output of another dtype
        ((A, B), {"out": np.empty((6, 4), np.float32).T}),     # non-contiguous output
        ((A, B), {"out": np.empty((4, 7), np.float32)}),       # wrong output shape
        ((A, B), {"out": np.frombuffer(bytes(96), np.float32).reshape(4, 6)}),  # read-only output
        ((A, B), {"out": [[0.0] * 6] * 4}),                    # a list is no output
        ((A, B), {"timeout": -1}),
        ((A, B), {"timeout": "soon"}),
    ]
    for args, kwargs in cases:
        with pytest.raises(vgpu.InvalidArgument) as e:
            k(*args, **kwargs)
        assert "Fix:" in str(e.value), (args, kwargs, str(e.value))
    C = np.full((4, 6), np.nan, np.float32)
    k(A, B, out=C)
    np.testing.assert_array_equal(C, np.full((4, 6), 5.0, np.float32))
    # A non-contiguous input is converted, not refused.
    k(np.ones((5, 4), np.float32).T, B, out=C)
    np.testing.assert_array_equal(C, np.full((4, 6), 5.0, np.float32))
    assert k.calls == 2


def test_bad_constructor_arguments():
    bad = [
        dict(op="nope", shape=(3,)),
        dict(op="matmul", shape=(3, 3)),
        dict(op="matmul"),
        dict(),
        dict(glsl=BODY),                                                    # no tensors
        dict(glsl=BODY, tensors=tensors(4)),                                # no groups
        dict(cuda="x", tensors=tensors(4), groups=(1,)),                    # cuda without entry
        dict(cpu=42, tensors=tensors(4), groups=(1,)),                      # not callable
        dict(spirv="text", tensors=tensors(4), groups=(1,)),                # str is no bytes
        dict(spirv=np.zeros(4, np.float32), tensors=tensors(4), groups=(1,)),
        dict(glsl=BODY, tensors=[("x", "float64", (4,))], groups=(1,)),
        dict(glsl=BODY, tensors=[("x", "float32", (4,), "sideways")], groups=(1,)),
        dict(glsl=BODY, tensors=tensors(4), groups=(1,), params=bytes(129)),
        dict(glsl=BODY, tensors=tensors(4), groups=(0,)),
        dict(glsl=BODY, tensors=tensors(4), groups=(1,), workgroup_size=(0,)),
        dict(glsl=BODY, tensors=tensors(4), groups=(1,), spec_constants={0: "x"}),
        dict(glsl=BODY, tensors=tensors(4), groups=(1,), device=3),
        dict(op="add", shape=(4,), glsl=BODY),
    ]
    for kwargs in bad:
        with pytest.raises(vgpu.Error) as e:
            vgpu.PersistentKernel(**kwargs)
        assert "Fix:" in str(e.value), (kwargs, str(e.value))
    with pytest.raises(vgpu.Error):
        vgpu.PersistentKernel("add", (4,), device="nosuch:0")
    still_works("cpu:0")


class Boom(Exception):
    pass


def test_exception_inside_python_callable_reaches_the_caller():
    n = 1000
    calls = []

    def body(wg):
        calls.append(1)
        if wg.workgroup_id[0] == 3 and state["fail"]:
            raise Boom("workgroup 3 failed")
        cpu_body(wg)

    state = {"fail": True}
    k = vgpu.PersistentKernel(name="scale_add", cpu=body, tensors=tensors(n), groups=((n + 63) // 64,),
                              params=params(n, 1.5, -0.25), device="cpu:0")
    x = np.arange(n, dtype=np.float32)
    for _ in range(3):  # each time the same exception, unchanged, and nothing left behind
        with pytest.raises(Boom, match="workgroup 3 failed") as e:
            k(x)
        assert e.traceback  # the callable's own frame is in it
    state["fail"] = False
    y = k(x)
    np.testing.assert_allclose(y, 1.5 * x.astype(np.float64) - 0.25, rtol=2e-6)
    still_works("cpu:0")


def test_workgroup_kept_past_its_call_is_refused():
    kept = []
    k = vgpu.PersistentKernel(name="keep", cpu=lambda wg: kept.append(wg), tensors=tensors(4), groups=(1,),
                              params=params(4, 1, 0), device="cpu:0")
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(np.zeros(4, np.float32))
    assert "kept" in str(e.value) and str(e.value).rstrip().split("Fix:")[-1].strip()
    assert kept
    with pytest.raises(vgpu.InvalidArgument):
        kept[0].buffer(0)
    assert "call over" in repr(kept[0])


def test_buffer_view_kept_past_its_call_is_refused_and_stays_readable():
    # A view kept by mistake: the call says so; the view keeps the kernel's buffers alive, so
    # reading it after the kernel is gone reads stale data, never freed memory.
    kept = []

    def body(wg):
        if not kept:
            kept.append(wg.buffer(0))

    k = vgpu.PersistentKernel(name="keep_view", cpu=body, tensors=tensors(4), groups=(1,),
                              params=params(4, 1, 0), device="cpu:0")
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(x)
    assert "view" in str(e.value)
    k(x)                                   # the next call keeps nothing: it runs
    view = kept[0]
    del k
    gc.collect()
    assert view.dtype == np.float32 and np.array_equal(view, x)
    still_works("cpu:0")


def test_kernel_call_inside_callable_is_refused():
    inner = vgpu.PersistentKernel("add", (4,), device="cpu:0")
    seen = []

    def body(wg):
        try:
            inner(np.zeros(4, np.float32), np.zeros(4, np.float32))
        except vgpu.InvalidArgument as e:
            seen.append(str(e))

    k = vgpu.PersistentKernel(name="nested", cpu=body, tensors=tensors(4), groups=(1,), params=params(4, 1, 0),
                              device="cpu:0")
    k(np.zeros(4, np.float32))
    assert seen and "Fix:" in seen[0]
    still_works("cpu:0")
