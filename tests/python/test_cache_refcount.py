# SPDX-License-Identifier: Apache-2.0
"""Reference counting: returned arrays outlive their Cache, a Cache keeps its device alive after
the Python names are gone, and 1e5 calls leak no memory (RSS)."""
import gc
import os
import sys

import numpy as np

import vgpu


def test_array_outlives_cache():
    A = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache = vgpu.Cache("cpu:0")
    C = cache.matmul(A, A.T)
    base = C.base
    del cache
    gc.collect()
    assert np.array_equal(C, A @ A.T)
    C += 1  # still writeable memory of its own
    assert np.array_equal(C, A @ A.T + 1)
    del base


def test_cache_keeps_its_device():
    d = vgpu.open("cpu:0")
    cache = vgpu.Cache(d)
    del d
    gc.collect()
    A = np.ones((3, 3), np.float32)
    assert np.array_equal(cache.matmul(A, A), A @ A)
    assert cache.device.id == "cpu:0"
    dev = cache.device
    del cache
    gc.collect()
    assert dev.counters()["dispatches"] >= 1  # the device handle outlives the Cache


def test_kernel_outlives_database():
    db = vgpu.KernelDatabase("cpu:0")
    k = db.get("matmul", 4)
    del db
    gc.collect()
    A = np.eye(4, dtype=np.float32)
    assert np.array_equal(k(A, A), A)


def test_inputs_are_not_held():
    A = np.ones((4, 4), np.float32)
    before = sys.getrefcount(A)
    cache = vgpu.Cache("cpu:0")
    for _ in range(10):
        cache.matmul(A, A)
        cache.matmul(A, A, out=np.empty((4, 4), np.float32))
    assert sys.getrefcount(A) == before


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_1e5_calls():
    cache = vgpu.Cache("cpu:0")
    A = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    out = np.empty((4, 4), np.float32)
    for _ in range(5000):  # warm-up: allocator pools, first-call caches
        cache.matmul(A, A)
        cache.matmul([[1.0]], [[2.0]], dtype="float32")
    gc.collect()
    start = rss_bytes()
    for i in range(100_000):
        if i % 2:
            C = cache.matmul(A, A)
        else:
            C = cache.matmul(A, A, out=out)
    gc.collect()
    grown = rss_bytes() - start
    assert np.allclose(C, A @ A, atol=1e-5)
    assert cache.dispatches == 110_000
    assert grown < 4 * 1024 * 1024, f"RSS grew by {grown / 1e6:.1f} MB over 1e5 calls"
