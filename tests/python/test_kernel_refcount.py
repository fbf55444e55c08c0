# SPDX-License-Identifier: Apache-2.0
"""Reference counting: a kernel keeps its device alive, arrays can go after a call, no leak over
1e5 calls of a small kernel (RSS), kernels with Python callables are freed."""
import gc
import weakref

import numpy as np

import vgpu
from test_user_kernels import cpu_body, params, tensors


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_kernel_keeps_its_device_alive():
    dev = vgpu.open("cpu:0") if hasattr(vgpu, "open") else "cpu:0"
    k = vgpu.PersistentKernel("add", (8,), device=dev)
    del dev
    gc.collect()
    a = np.ones(8, np.float32)
    np.testing.assert_array_equal(k(a, a), 2 * a)
    assert k.device_id == "cpu:0"


def test_arrays_may_go_after_the_call():
    k = vgpu.PersistentKernel("add", (1000,), device="cpu:0")
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, np.float32)
    out = k(a, b)
    del a, b
    gc.collect()
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.float32) + 1)
    # A converted input (a list) lives only for the call.
    out2 = k(list(range(1000)), [1.0] * 1000)
    np.testing.assert_array_equal(out2, out)
    # The kernel does not keep the arrays it was given.
    c = np.zeros(1000, np.float32)
    ref = weakref.ref(c)
    k(c, c, np.empty(1000, np.float32))
    del c
    gc.collect()
    assert ref() is None


def test_no_leak_over_1e5_calls():
    k = vgpu.PersistentKernel("add", (4,), device="cpu:0")
    a = np.ones(4, np.float32)
    out = np.empty(4, np.float32)
    for _ in range(2000):  # warm up allocators
        k(a, a, out)
        k(a, a)
    before = rss_kib()
    for _ in range(50000):
        k(a, a, out)
        k(a, a)
    grown = rss_kib() - before
    assert k.calls == 104000
    assert grown < 4096, f"RSS grew by {grown} KiB over 1e5 calls"


def test_callable_kernel_is_freed():
    class Body:
        def __call__(self, wg):
            cpu_body(wg)

    body = Body()
    ref = weakref.ref(body)
    k = vgpu.PersistentKernel(name="scale_add", cpu=body, tensors=tensors(16), groups=(1,), params=params(16, 1, 0),
                              device="cpu:0")
    del body
    gc.collect()
    assert ref() is not None  # the kernel holds its callable
    k(np.zeros(16, np.float32))
    del k
    gc.collect()
    assert ref() is None  # and lets it go with the kernel


def test_read_only_inputs_are_used_in_place():
    k = vgpu.PersistentKernel("add", (4,), device="cpu:0")
    a = np.frombuffer(np.arange(4, dtype=np.float32).tobytes(), np.float32)  # read-only
    assert not a.flags.writeable
    np.testing.assert_array_equal(k(a, a), 2 * np.arange(4, dtype=np.float32))


def test_counters_readable_while_a_callable_kernel_runs():
    import threading
    import time

    started = threading.Event()

    def body(wg):
        started.set()
        time.sleep(0.05)
        cpu_body(wg)

    k = vgpu.PersistentKernel(name="slow", cpu=body, tensors=tensors(16), groups=(1,), params=params(16, 1, 0),
                              device="cpu:0")
    t = threading.Thread(target=lambda: k(np.zeros(16, np.float32)))
    t.start()
    started.wait(10)
    assert k.calls in (0, 1)  # must not deadlock: the reader lets the GIL go while it waits
    repr(k)
    t.join(10)
    assert not t.is_alive() and k.calls == 1
