# SPDX-License-Identifier: Apache-2.0
"""Threads calling one Cache: 8 threads × 50 calls with different shapes, every result checked
against numpy; the counters add up (compiles == distinct shapes)."""
import numpy as np
import pytest

import vgpu
from core_devices import close, device_params
from threads_support import run_threads

SHAPES = [(3, 5, 7), (8, 8, 8), (1, 9, 2), (16, 4, 11), (5, 5, 5), (12, 1, 3), (7, 13, 6), (2, 2, 2)]


@pytest.mark.parametrize("device_id", device_params())
def test_eight_threads_share_one_cache(device_id):
    cache = vgpu.Cache(device_id)
    done = []

    def worker(t):
        rng = np.random.default_rng(100 + t)
        for i in range(50):
            m, k, n = SHAPES[(t + i) % len(SHAPES)]
            A = rng.standard_normal((m, k)).astype(np.float32)
            B = rng.standard_normal((k, n)).astype(np.float32)
            C = cache.matmul(A, B)
            assert C.shape == (m, n) and close(C, A.astype(np.float64) @ B, k), f"call {i} ({m}x{k}x{n}): wrong result"
        done.append(t)

    run_threads(worker, 8)
    assert sorted(done) == list(range(8))
    assert cache.compiles == len(SHAPES)
    assert cache.dispatches == 8 * 50
    assert cache.hits == 8 * 50 - len(SHAPES)
    assert cache.report() == f"VGPUCache: {len(SHAPES)} compiles, {400 - len(SHAPES)} cache hits, 400 dispatches"


def test_threads_share_one_kernel_database():
    db = vgpu.KernelDatabase("cpu:0")

    def worker(t):
        rng = np.random.default_rng(t)
        for i in range(20):
            n = 4 + (t + i) % 3
            k = db.get("matmul", n)
            A = rng.standard_normal((n, n)).astype(np.float32)
            assert close(k(A, A), A.astype(np.float64) @ A, n), "wrong result"

    run_threads(worker, 6)
    assert db.misses == 3 and db.hits == 6 * 20 - 3 and len(db) == 3
