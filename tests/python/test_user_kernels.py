# SPDX-License-Identifier: Apache-2.0
"""User kernels from Python on every device: a GLSL body, a complete GLSL shader and its SPIR-V
(Vulkan, OpenGL), CUDA C (CUDA), a Python callable (CPU), each y = a*x + b checked against numpy
with random inputs, awkward sizes and NaN-poisoned outputs."""
import shutil
import subprocess

import numpy as np
import pytest

import vgpu
from threads_support import run_threads
from kernel_devices import backend, device, rng  # noqa: F401 — the fixture

PARAMS = np.dtype([("n", "<u4"), ("a", "<f4"), ("b", "<f4"), ("pad", "<u4")])
SIZES = (1, 15, 64, 1000)

BODY = """
VGPU_PARAMS { uint n; float a; float b; uint pad; } p;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = p.a * x[i] + p.b;
}
"""

SHADER = """#version 450
layout(local_size_x = 32) in;
layout(constant_id = 0) const float SCALE = 1.0;
layout(push_constant) uniform Params { uint n; float a; float b; uint pad; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = SCALE * (p.a * x[i] + p.b);
}
"""

CUDA = """
struct Params { unsigned n; float a; float b; unsigned pad; };
extern "C" __global__ void scale_add(const float* x, float* y, Params p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) y[i] = p.a * x[i] + p.b;
}
"""


def params(n, a, b):
    return np.array((n, a, b, 0), dtype=PARAMS).tobytes()


def tensors(n):
    return [vgpu.Tensor("x", "float32", (n,), "read"), ("y", np.float32, (n,), "write")]


def cpu_body(wg):
    n, a, b, _ = np.frombuffer(wg.params[:16], dtype=PARAMS)[0]
    x, y = wg.buffer(0), wg.buffer(1)
    start = wg.global_offset[0]
    end = min(start + wg.workgroup_size[0], int(n))
    y[start:end] = a * x[start:end] + b


def spirv_of(text):
    tool = shutil.which("glslc")
    if tool:
        cmd = [tool, "-fshader-stage=compute", "--target-env=vulkan1.1", "-", "-o", "-"]
    else:
        tool = shutil.which("glslangValidator")
        if not tool:
            pytest.skip("neither glslc nor glslangValidator is installed, so no SPIR-V can be made here")
        cmd = [tool, "-V", "--stdin", "-S", "comp", "-o", "/dev/stdout"]
    return subprocess.run(cmd, input=text.encode(), capture_output=True, check=True).stdout


def check(y, x, a, b, scale=1.0):
    want = scale * (a * x.astype(np.float64) + b)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)


def kernels_for(dev, n):
    """(label, kernel, scale) for each form the device's backend runs."""
    be = backend(dev)
    groups64 = ((n + 63) // 64,)
    p = params(n, 1.5, -0.25)
    if be == "cpu":
        return [("cpu callable", vgpu.PersistentKernel(name="scale_add", cpu=cpu_body, tensors=tensors(n), groups=groups64,
                                                      params=p, device=dev), 1.0)]
    if be == "cuda":
        return [("cuda", vgpu.PersistentKernel(name="scale_add", cuda=CUDA, entry="scale_add", tensors=tensors(n),
                                              groups=groups64, params=p, workgroup_size=(64,), device=dev), 1.0)]
    g32 = ((n + 31) // 32,)
    out = [
        ("glsl body", vgpu.PersistentKernel(name="scale_add", glsl=BODY, tensors=tensors(n), groups=groups64, params=p,
                                           device=dev), 1.0),
        ("glsl body, wg 32", vgpu.PersistentKernel(name="scale_add", glsl=BODY, tensors=tensors(n), groups=g32,
                                                  params=p, workgroup_size=(32,), device=dev), 1.0),
        ("glsl shader", vgpu.PersistentKernel(name="scale_add", glsl_shader=SHADER, tensors=tensors(n), groups=g32,
                                             params=p, device=dev), 1.0),
        ("glsl shader, SCALE=2 by id", vgpu.PersistentKernel(name="scale_add", glsl_shader=SHADER, tensors=tensors(n),
                                                            groups=g32, params=p, spec_constants={0: 2.0},
                                                            device=dev), 2.0),
        ("glsl shader, SCALE=3 by name", vgpu.PersistentKernel(name="scale_add", glsl_shader=SHADER,
                                                              tensors=tensors(n), groups=g32, params=p,
                                                              spec_constants={"SCALE": 3.0}, device=dev), 3.0),
    ]
    words = spirv_of(SHADER)
    out.append(("spirv bytes", vgpu.PersistentKernel(name="scale_add", spirv=words, tensors=tensors(n), groups=g32,
                                                    params=p, device=dev), 1.0))
    out.append(("spirv uint32 array", vgpu.PersistentKernel(name="scale_add", spirv=np.frombuffer(words, np.uint32),
                                                           tensors=tensors(n), groups=g32, params=p,
                                                           bindings="derived", device=dev), 1.0))
    return out


@pytest.mark.parametrize("n", SIZES)
def test_user_kernel_forms_match_numpy(device, n):
    r = rng(n)
    for label, k, scale in kernels_for(device, n):
        for _ in range(2):
            x = r.standard_normal(n).astype(np.float32)
            y = np.full(n, np.nan, np.float32)
            assert k(x, out=y) is y, label
            check(y, x, 1.5, -0.25, scale)
            check(k(x), x, 1.5, -0.25, scale)
        assert k.calls == 4, label


def test_declared_bindings_and_slots(device):
    if backend(device) not in ("vulkan", "opengl"):
        pytest.skip(f"{device}: the CPU and CUDA devices run no GLSL/SPIR-V")
    n = 100
    # Tensors listed in the other order, placed at their slots with slots=; bindings declared.
    k = vgpu.PersistentKernel(name="scale_add", glsl_shader=SHADER, tensors=[("y", "float32", (n,), "write"),
                                                                           ("x", "float32", (n,), "read")],
                              slots=[1, 0], groups=((n + 31) // 32,), params=params(n, 2.0, 1.0),
                              bindings=[(0, "read", "x"), (1, "write", "y")], device=device)
    x = rng(1).standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    k(y, x)
    check(y, x, 2.0, 1.0)
    assert k.workgroup_size == (32, 1, 1)


def test_steps_run_in_order(device):
    if backend(device) == "cuda":
        pytest.skip(f"{device}: covered by the other CUDA cases")
    n = 50
    common = dict(name="scale_add", tensors=[("x", "float32", (n,), "read"), ("t", "float32", (n,), "read_write", True),
                                            ("y", "float32", (n,), "write")], device=device)
    g = ((n + 63) // 64,)
    steps = [vgpu.Step({0: 0, 1: 1}, params(n, 2.0, 0.0), g), vgpu.Step({0: 1, 1: 2}, params(n, 1.0, 3.0), g)]
    if backend(device) == "cpu":
        k = vgpu.PersistentKernel(cpu=lambda wg: cpu_body(wg), steps=steps, **common)
    else:
        k = vgpu.PersistentKernel(glsl=BODY, steps=steps, **common)
    x = rng(2).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(k(x), 2.0 * x.astype(np.float64) + 3.0, rtol=2e-6, atol=1e-6)
    assert k.dispatches == 2


def test_cpu_callable_from_threads():
    n = 300
    k = vgpu.PersistentKernel(name="scale_add", cpu=cpu_body, tensors=tensors(n), groups=((n + 63) // 64,),
                              params=params(n, 1.5, -0.25), device="cpu:0")
    def worker(seed):
        r = rng(seed)
        for _ in range(20):
            x = r.standard_normal(n).astype(np.float32)
            check(k(x), x, 1.5, -0.25)

    run_threads(worker, 4)
    assert k.calls == 80


def test_builtin_kernel_from_threads(device):
    k = vgpu.PersistentKernel("mul", (257,), device=device)
    def worker(seed):
        r = rng(seed)
        for _ in range(10):
            a, b = (r.standard_normal(257).astype(np.float32) for _ in range(2))
            np.testing.assert_allclose(k(a, b), a * b, rtol=1e-6)

    run_threads(worker, 4)
    assert k.calls == 40


def test_one_source_at_two_sizes_in_one_process(device):
    # Kernels of one source share a compile (L1): the second size must not be checked against
    # the first's buffer sizes (found on the H200, where one pytest process ran every file).
    if backend(device) in ("cpu", "cuda"):
        pytest.skip(f"{device}: the CPU and CUDA devices run no GLSL")
    body = BODY + "\n// this test's own text: its first compile is the n = 1000 one\n"
    for n in (1000, 1, 15):
        k = vgpu.PersistentKernel(name="scale_add", glsl=body, tensors=tensors(n), groups=((n + 63) // 64,),
                                  params=params(n, 1.5, -0.25), device=device)
        x = rng(n).standard_normal(n).astype(np.float32)
        check(k(x), x, 1.5, -0.25)
