# SPDX-License-Identifier: Apache-2.0
"""float16 and bfloat16 from Python on every device found: numpy float16 arrays natively,
bfloat16 as uint16 bit patterns tagged dtype="bfloat16" (or torch.bfloat16 through DLPack);
every built-in op computes on them in float32 and rounds its result once, within the
tolerances docs/numerics.md states; mixing dtypes is numpy's promotion, never a silent
downcast."""
import numpy as np
import pytest

import vgpu
from core_devices import device_params

RNG = np.random.default_rng(32)
U = {"float16": 2.0**-11, "bfloat16": 2.0**-8}  # unit roundoff of the result


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def to_bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even (NaN-free inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def within(got, exact, bound32, dtype):
    """|got - exact| <= bound32 + u·(|exact| + bound32) + f16's half subnormal, element-wise."""
    tiny = 2.0**-25 if dtype == "float16" else 0.0
    bound = bound32 + U[dtype] * (np.abs(exact) + bound32) + tiny
    return np.all(np.abs(got.astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("device_id", device_params())
def test_float16_matmul_and_ops(device_id):
    a = rand(17, 33).astype(np.float16)
    b = rand(33, 9).astype(np.float16)
    c = vgpu.matmul(a, b, device=device_id)  # host in, host out
    assert c.dtype == np.float16 and c.shape == (17, 9)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert within(c, exact, 2 * 33 * 2.0**-23 * mag, "float16")
    A, B = vgpu.asarray(a, device=device_id), vgpu.asarray(b, device=device_id)
    C = A @ B
    assert C.dtype == np.float16 and np.array_equal(C.numpy(), c)
    x, y = rand(1001).astype(np.float16), rand(1001).astype(np.float16)
    X, Y = vgpu.asarray(x, device=device_id), vgpu.asarray(y, device=device_id)
    # One rounding of the float32 sum and product (exact in float32 for these inputs' range).
    assert np.array_equal(vgpu.add(X, Y).numpy(), (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))
    assert np.array_equal(vgpu.multiply(X, Y).numpy(),
                          (x.astype(np.float32) * y.astype(np.float32)).astype(np.float16))
    s = vgpu.sum(X).numpy()
    assert s.dtype == np.float16 and s.shape == ()
    assert abs(float(s) - x.astype(np.float64).sum()) <= 2.0**-11 * abs(x.astype(np.float64).sum()) + 1e-3
    sm = vgpu.softmax_rows(vgpu.asarray(rand(3, 50).astype(np.float16), device=device_id)).numpy()
    assert sm.dtype == np.float16 and np.allclose(sm.astype(np.float64).sum(axis=1), 1, atol=50 * 2.0**-11)
    want = (2 * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)  # before y changes (cpu: in place)
    vgpu.axpy(2.0, X, Y)  # alpha converted to x's dtype
    assert np.array_equal(Y.numpy(), want)


@pytest.mark.parametrize("device_id", device_params())
def test_bfloat16_through_uint16_bits(device_id):
    a, b = rand(8, 20), rand(20, 5)
    abits, bbits = to_bf16_bits(a), to_bf16_bits(b)
    A = vgpu.asarray(abits, dtype="bfloat16", device=device_id)  # the bits, tagged
    assert A.dtype == "bfloat16" and A.shape == (8, 20) and A.nbytes == abits.nbytes
    assert np.array_equal(A.numpy(bits=True), abits)
    # Any other numeric input is read as float32 and rounded to nearest even.
    B = vgpu.asarray(b, dtype="bfloat16", device=device_id)
    assert np.array_equal(B.numpy(bits=True), bbits)
    C = A @ B
    assert C.dtype == "bfloat16" and C.shape == (8, 5)
    # Host in, host out: bits in, bits out.
    cbits = vgpu.matmul(abits, bbits, dtype="bfloat16", device=device_id)
    assert cbits.dtype == np.uint16 and cbits.shape == (8, 5)
    fa, fb = from_bf16_bits(abits).astype(np.float64), from_bf16_bits(bbits).astype(np.float64)
    exact = fa @ fb
    assert within(from_bf16_bits(cbits), exact, 2 * 20 * 2.0**-23 * (np.abs(fa) @ np.abs(fb)), "bfloat16")
    assert np.array_equal(C.numpy(bits=True), cbits)  # one computation, both ways
    with pytest.raises(vgpu.InvalidArgument) as e:  # numpy has no bfloat16 to hand back
        C.numpy()
    assert "bits=True" in e.value.fix


def test_bfloat16_rounds_float32_input_to_nearest_even():
    x = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -2.5, 3.0e38, 1.0e-3, -0.0], dtype=np.float32)
    bits = vgpu.asarray(x, dtype="bfloat16", device="cpu:0").numpy(bits=True)
    assert bits.dtype == np.uint16
    # Ties to even: 1+2^-8 -> 1.0 (0x3F80), 1+3·2^-8 -> 1+2^-6 (0x3F82).
    assert bits[0] == 0x3F80 and bits[1] == 0x3F82
    assert np.array_equal(bits, to_bf16_bits(x))


def test_mixed_and_unsupported_dtypes():
    a16, b32 = rand(4, 5).astype(np.float16), rand(5, 3)
    c = vgpu.matmul(a16, b32, device="cpu:0")  # numpy: float16 with float32 is float32
    assert c.dtype == np.float32
    A, B = vgpu.asarray(a16, device="cpu:0"), vgpu.asarray(to_bf16_bits(b32), dtype="bfloat16", device="cpu:0")
    with pytest.raises(vgpu.NotSupported) as e:  # float16 with bfloat16 promotes to float32: not silently
        vgpu.add(A, vgpu.asarray(rand(4, 5), dtype="bfloat16", device="cpu:0"))
    assert "Fix" in str(e.value)
    with pytest.raises(vgpu.NotSupported):
        vgpu.matmul(rand(2, 2).astype(np.float64), rand(2, 2).astype(np.float64), device="cpu:0", dtype="float64")
    c = vgpu.matmul(rand(3, 4), rand(4, 2), device="cpu:0", dtype="float16")  # the opt-in cast
    assert c.dtype == np.float16
    assert B.dtype == "bfloat16"


@pytest.mark.parametrize("device_id", device_params())
def test_cache_matmul_float16(device_id):
    cache = vgpu.Cache(device=device_id)
    a, b = rand(16, 16).astype(np.float16), rand(16, 16).astype(np.float16)
    c = cache.matmul(a, b)
    assert c.dtype == np.float16
    exact = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert within(c, exact, 2 * 16 * 2.0**-23 * mag, "float16")


def test_torch_bfloat16_through_dlpack():
    torch = pytest.importorskip("torch")
    a = torch.randn(6, 10).to(torch.bfloat16)
    b = torch.randn(10, 4).to(torch.bfloat16)
    A, B = vgpu.from_dlpack(a), vgpu.from_dlpack(b)
    C = torch.from_dlpack(A @ B)
    assert C.dtype == torch.bfloat16
    exact = a.double() @ b.double()
    mag = a.double().abs() @ b.double().abs()
    bound = 2 * 10 * 2.0**-23 * mag
    assert torch.all((C.double() - exact).abs() <= bound + 2.0**-8 * (exact.abs() + bound))


def test_selecting_cache_measures_float16_on_its_own():
    """A Cache without a device selects per dtype (Cache::device_for: float16 has its own size
    class and choice, tests/selection/result_check_test.cpp checks how): the call runs and is
    right."""
    cache = vgpu.Cache()
    a, b = rand(40, 24).astype(np.float16), rand(24, 33).astype(np.float16)
    c = cache.matmul(a, b)
    assert c.dtype == np.float16 and c.shape == (40, 33)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert within(c, exact, 2 * 24 * 2.0**-23 * mag, "float16")


def test_select_and_explain_per_dtype():
    """vgpu.select/explain take dtype=: a 16-bit op has its own selection, named op.f16 / op.bf16."""
    s = vgpu.explain("matmul", (24, 16, 8), dtype="float16")
    assert s.op == "matmul.f16" and s.device
    assert vgpu.select("matmul", (24, 16, 8), dtype="bfloat16").id == vgpu.explain("matmul", (24, 16, 8),
                                                                                      dtype="bfloat16").device
    assert vgpu.explain("add", 100).op == "add"
    with pytest.raises(vgpu.NotSupported):
        vgpu.select("matmul", 8, dtype="float64")
