# SPDX-License-Identifier: Apache-2.0
"""The design's Python flows 1 and 2, as the design wrote them, with only the vgpu names
substituted: the 100-call VGPUCache loop with its exact report, and the KernelDatabase
N=16 → hit → N=32 flow with its exact report."""
import numpy as np

import vgpu


def test_flow1_cache_matmul_100_calls():
    A = np.random.rand(64, 64).astype(np.float32)
    B = np.random.rand(64, 64).astype(np.float32)
    cache = vgpu.Cache()
    for _ in range(100):
        C = cache.matmul(A, B)
    assert np.allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    print(cache.report())
    assert cache.report() == "VGPUCache: 1 compiles, 99 cache hits, 100 dispatches"
    assert (cache.compiles, cache.hits, cache.dispatches) == (1, 99, 100)


def test_flow2_kernel_database():
    db = vgpu.KernelDatabase()
    k16 = db.get('matmul', 16)
    A = np.random.rand(16, 16).astype(np.float32)
    B = np.random.rand(16, 16).astype(np.float32)
    C = k16(A, B)
    assert np.allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    k16b = db.get('matmul', 16)            # hit: the same kernel
    assert k16b == k16
    k32 = db.get('matmul', 32)             # a new shape compiles
    A32 = np.random.rand(32, 32).astype(np.float32)
    assert np.allclose(k32(A32, A32), A32 @ A32, rtol=1e-4, atol=1e-4)
    print(db.report())
    assert db.report() == "KernelDB: 1 hits, 2 compiles"
    assert (db.hits, db.misses, len(db)) == (1, 2, 2)
    db.evict('matmul')
    assert len(db) == 0
    assert np.allclose(k16(A, B), A @ B, rtol=1e-4, atol=1e-4)  # a returned kernel outlives evict
