# SPDX-License-Identifier: Apache-2.0
"""The design's flow 3: a persistent matmul kernel fed 100 random matrices, each checked against
numpy, compiled once; plus the call forms (allocated outputs, out=, every tensor passed)."""
import numpy as np
import pytest

import vgpu
from kernel_devices import device, rng  # noqa: F401 — the fixture


def check_matmul(C, A, B):
    want = A.astype(np.float64) @ B.astype(np.float64)
    bound = (A.shape[1] + 1) * 1.2e-7 * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)) + 1e-30
    assert C.dtype == np.float32 and C.shape == want.shape
    assert np.all(np.abs(C - want) <= bound), np.max(np.abs(C - want) - bound)


def test_flow3_persistent_matmul_100_random_matrices(device):
    N = 16
    k = vgpu.PersistentKernel("matmul", (N, N, N), device=device)
    counters = getattr(vgpu, "counters", None)
    before = counters() if counters else None
    r = rng(3)
    for _ in range(100):
        A = r.standard_normal((N, N)).astype(np.float32)
        B = r.standard_normal((N, N)).astype(np.float32)
        check_matmul(k(A, B), A, B)
    assert k.calls == 100 and k.dispatches >= 100
    assert k.total_seconds > 0
    if before is not None:
        after = counters()
        assert after["compiles"] - before["compiles"] == 0, "feeding new matrices compiled again"


def test_flow3_compiles_once():
    counters = getattr(vgpu, "counters", None)
    if counters is None:
        pytest.skip("vgpu.counters() is not in this build (issue14-core adds it)")
    before = counters()
    k = vgpu.PersistentKernel("matmul", (16, 16, 16), device="cpu:0")
    A = np.ones((16, 16), np.float32)
    for _ in range(100):
        k(A, A)
    assert counters()["compiles"] - before["compiles"] <= 1


@pytest.mark.parametrize("m,kk,n", [(1, 1, 1), (15, 16, 17), (3, 33, 2)])
def test_awkward_sizes_and_call_forms(device, m, kk, n):
    k = vgpu.PersistentKernel("matmul", (m, kk, n), device=device)
    r = rng(m * 100 + n)
    A = r.standard_normal((m, kk)).astype(np.float32)
    B = r.standard_normal((kk, n)).astype(np.float32)
    check_matmul(k(A, B), A, B)                      # allocated and returned
    C = np.full((m, n), np.nan, np.float32)          # poisoned
    assert k(A, B, out=C) is C
    check_matmul(C, A, B)
    C2 = np.full((m, n), np.nan, np.float32)
    assert k(A, B, C2) is C2                         # every tensor passed
    check_matmul(C2, A, B)
    check_matmul(k(A.astype(np.float64), B.tolist()), A, B)  # converted inputs


def test_axpy_read_write_in_place(device):
    n = 1000
    k = vgpu.PersistentKernel("axpy", (n,), device=device)
    r = rng(5)
    x = r.standard_normal(n).astype(np.float32)
    y = r.standard_normal(n).astype(np.float32)
    want = 2.5 * x.astype(np.float64) + y
    got = k(np.array([2.5], np.float32), x, y)
    assert got is y
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_default_device_and_repr():
    k = vgpu.PersistentKernel("add", (17,))
    a = np.arange(17, dtype=np.float32)
    np.testing.assert_array_equal(k(a, a), 2 * a)
    text = repr(k)
    assert "add" in text and "1 calls" in text and k.device_id in text
    assert [t.name for t in k.tensors] == ["a", "b", "out"] or len(k.tensors) == 3
