# SPDX-License-Identifier: Apache-2.0
"""A cpu= callable on cpu:0 that runs a matmul on another device (vgpu.Cache("vulkan:0"), else
"opengl:0") inside its workgroup: the inner call gets its product and the outer call every one of
its outputs, from one thread and from three at once (issue 29 item 1: the round trip's op lists
were per thread, so the inner trip replaced the outer one's reads and the outer outputs were never
read back). A call on cpu:0 itself from inside the callable is still refused."""
import numpy as np
import pytest

import vgpu
from threads_support import run_threads

N = 64
A = (np.arange(64, dtype=np.float32) % 5).reshape(8, 8)  # small integers: A @ A is exact
AA = A.astype(np.float64) @ A.astype(np.float64)


def inner_device():
    """The first software or hardware GPU here, or a skip saying none is."""
    ids = [d.id for d in vgpu.devices()]
    for want in ("vulkan:0", "opengl:0", "cuda:0"):
        if want in ids:
            return want
    pytest.skip(f"no GPU device here to nest a call on (devices: {ids})")


def nested_kernel(cache, inner_wrong):
    """y = 2·x + (A @ A)[0, 1], the product computed on cache's device inside the workgroup."""
    def body(wg):
        c = cache.matmul(A, A)
        if not np.array_equal(c, AA):
            inner_wrong.append(c)
        x, y = wg.buffer(0), wg.buffer(1)
        y[:] = 2 * x + c[0, 1]

    return vgpu.PersistentKernel(name="nested_matmul", cpu=body,
                                 tensors=[("x", "float32", (N,), "read"), ("y", "float32", (N,), "write")],
                                 groups=(1,), device="cpu:0")


def test_cpu_callable_runs_a_matmul_on_another_device():
    cache = vgpu.Cache(inner_device())
    inner_wrong = []
    k = nested_kernel(cache, inner_wrong)
    for call in range(10):
        x = np.arange(N, dtype=np.float32) + call
        y = np.full(N, np.nan, np.float32)
        k(x, out=y)
        assert np.array_equal(y, 2 * x + np.float32(AA[0, 1])), (call, y)
    assert not inner_wrong


def test_three_threads_each_get_their_own_outputs():
    cache = vgpu.Cache(inner_device())
    inner_wrong = []
    k = nested_kernel(cache, inner_wrong)
    wrong = []

    def worker(t):
        for call in range(20):
            x = np.arange(N, dtype=np.float32) + 1000 * t + call
            y = np.full(N, np.nan, np.float32)
            k(x, out=y)
            if not np.array_equal(y, 2 * x + np.float32(AA[0, 1])):
                wrong.append((t, call))

    run_threads(worker, 3)
    assert not wrong, f"{len(wrong)} of 60 calls got wrong outputs: {wrong[:5]}"
    assert not inner_wrong


def test_a_call_on_the_same_device_is_still_refused():
    cache = vgpu.Cache("cpu:0")
    refused = []

    def body(wg):
        try:
            cache.matmul(A, A)
        except vgpu.InvalidArgument as e:
            refused.append(str(e))
        wg.buffer(1)[:] = 1

    k = vgpu.PersistentKernel(name="nested_same_device", cpu=body,
                              tensors=[("x", "float32", (N,), "read"), ("y", "float32", (N,), "write")],
                              groups=(1,), device="cpu:0")
    y = k(np.zeros(N, np.float32))
    assert np.array_equal(y, np.ones(N, np.float32))
    assert len(refused) == 1 and "same device" in refused[0] and "Fix:" in refused[0], refused
