# SPDX-License-Identifier: Apache-2.0
"""precision="tf32" on vgpu.matmul, Cache.matmul and Cache.matmul_batch, on every device found:
an explicit opt-in (the default is "highest"), within TF32's bound where a GPU multiplies in
TF32 (CUDA sm_80+), and float32's exact result everywhere else; bad values are refused with a
Fix and leave the Cache usable."""
import numpy as np
import pytest

import vgpu
from core_devices import device_params

RNG = np.random.default_rng(33)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def tf32_close(got, a, b):
    """|got - a@b| within float32's worst case plus the TF32 rounding of both inputs of each
    product, (2^-10 + 2^-22)·Σ|a||b| (vgpu::tolerance::tf32_inputs)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    absdot = np.abs(a64) @ np.abs(b64)
    k = a.shape[-1]
    bound = (2 * k * 2.0**-23 + 2.0**-10 + 2.0**-22) * absdot
    return np.all(np.abs(got.astype(np.float64) - exact) <= bound)


def has_tf32(device_id):
    """Whether the device may multiply float32 in TF32 (CUDA compute capability 8.0 or later)."""
    info = next(i for i in vgpu.devices() if i.id == device_id)
    return info.backend == "cuda" and any(f.startswith("sm_") and int(f[3:]) >= 80 for f in info.features)


@pytest.mark.parametrize("device_id", device_params())
def test_tf32_is_within_its_bound_and_float32_where_no_tf32_runs(device_id):
    a, b = rand(67, 129), rand(129, 45)
    got = vgpu.matmul(a, b, device=device_id, precision="tf32")
    assert got.dtype == np.float32 and got.shape == (67, 45)
    assert tf32_close(got, a, b)
    highest = vgpu.matmul(a, b, device=device_id)
    if not has_tf32(device_id):
        np.testing.assert_array_equal(got, highest)  # the same float32 kernel, the same bits
    # On arrays, and into out=.
    dev = vgpu.open(device_id)
    A, B = vgpu.asarray(a, device=dev), vgpu.asarray(b, device=dev)
    C = vgpu.matmul(A, B, precision="tf32")
    assert tf32_close(C.numpy(), a, b)
    out = vgpu.empty((67, 45), device=dev)
    assert vgpu.matmul(A, B, out=out, precision="tf32") is out
    assert tf32_close(out.numpy(), a, b)
    # A stack whose B is one matrix (one launch), and one of B (the batched kernel: float32).
    sa = rand(3, 20, 31)
    assert tf32_close(vgpu.matmul(sa, b[:31, :7].copy(), device=device_id, precision="tf32"), sa, b[:31, :7])
    sb = rand(3, 31, 7)
    assert tf32_close(vgpu.matmul(sa, sb, device=device_id, precision="tf32"), sa, sb)


@pytest.mark.parametrize("device_id", device_params())
def test_cache_precision(device_id):
    cache = vgpu.Cache(device=device_id)
    a, b = rand(40, 50), rand(50, 60)
    assert tf32_close(cache.matmul(a, b, precision="tf32"), a, b)
    highest = cache.matmul(a, b)
    np.testing.assert_allclose(highest, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    out = np.empty((40, 60), np.float32)
    assert cache.matmul(a, b, out=out, precision="tf32") is out
    assert tf32_close(out, a, b)
    for c in cache.matmul_batch([(a, b), (a, b)], precision="tf32"):
        assert tf32_close(c, a, b)
    # matmul_tf32 is its own op: its own persistent kernel beside matmul's.
    assert cache.compiles == 2


def test_precision_values():
    a, b = rand(4, 5), rand(5, 3)
    np.testing.assert_array_equal(vgpu.matmul(a, b, precision="highest"), vgpu.matmul(a, b))
    np.testing.assert_array_equal(vgpu.matmul(a, b, precision=None), vgpu.matmul(a, b))
    assert "matmul_tf32" in vgpu.ops()
    cache = vgpu.Cache()
    for bad in ("TF32", "high", "bf16"):
        with pytest.raises(vgpu.InvalidArgument) as e:
            vgpu.matmul(a, b, precision=bad)
        assert "Fix" in str(e.value) and "tf32" in str(e.value)
        with pytest.raises(vgpu.InvalidArgument):
            cache.matmul(a, b, precision=bad)
    with pytest.raises(vgpu.InvalidArgument) as e:
        vgpu.matmul(a, b, precision=32)
    assert "Fix" in str(e.value)
    # The cache is still usable after the refusals.
    np.testing.assert_allclose(cache.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
