# SPDX-License-Identifier: Apache-2.0
"""Cache.matmul on every device found, against numpy, and every way to call it wrongly: each
gives vgpu.InvalidArgument whose str() ends with the Fix, and the same Cache computes right
afterwards."""
import numpy as np
import pytest

import vgpu
from core_devices import close, device_params

RNG = np.random.default_rng(14)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture(scope="module")
def cache():
    return vgpu.Cache("cpu:0")


def still_works(cache):
    A, B = rand(5, 7), rand(7, 3)
    C = cache.matmul(A, B)
    assert C.dtype == np.float32 and C.shape == (5, 3)
    assert close(C, A.astype(np.float64) @ B, 7)


def check_invalid(e):
    assert e.value.category == "invalid_argument"
    assert e.value.problem and e.value.fix
    assert str(e.value).endswith("Fix: " + e.value.fix), str(e.value)


@pytest.mark.parametrize("device_id", device_params())
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 5), (64, 64, 64), (3, 1, 9)])
def test_matmul_matches_numpy_on_every_device(device_id, m, k, n):
    cache = vgpu.Cache(device_id)
    assert cache.device.id == device_id
    A, B = rand(m, k), rand(k, n)
    C = cache.matmul(A, B)
    assert C.dtype == np.float32 and C.shape == (m, n) and C.flags.c_contiguous
    assert close(C, A.astype(np.float64) @ B, k)
    out = np.full((m, n), np.nan, np.float32)  # poisoned
    assert cache.matmul(A, B, out=out) is out
    assert close(out, A.astype(np.float64) @ B, k)
    assert cache.report() == "VGPUCache: 1 compiles, 1 cache hits, 2 dispatches"
    assert repr(cache) == f"Cache(device='{device_id}', compiles=1, hits=1, dispatches=2)"


@pytest.mark.parametrize("A,B", [
    (np.ones((4, 5), np.float32), np.ones((4, 5), np.float32)),        # A.cols != B.rows
    (np.ones(4, np.float32), np.ones((5, 4), np.float32)),             # a vector of the wrong length
    (np.ones((2, 4, 5), np.float32), np.ones((3, 5, 4), np.float32)),  # batch dimensions that do not broadcast
    (np.float32(3), np.ones((1, 1), np.float32)),                      # 0-D
], ids=["inner", "vector", "batch", "scalar"])
def test_wrong_shapes(cache, A, B):
    with pytest.raises(vgpu.InvalidArgument) as e:
        cache.matmul(A, B)
    check_invalid(e)
    still_works(cache)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint8])
def test_other_dtypes_are_refused_or_cast_on_request(cache, dtype):
    """numpy's result dtype of A @ B is dtype, which vgpu does not compute in: NotSupported names
    it (never a silent downcast); dtype="float32" opts into converting the inputs."""
    A = (rand(6, 4) * 4).astype(dtype)
    B = (rand(4, 3) * 4).astype(dtype)
    with pytest.raises(vgpu.NotSupported) as e:
        cache.matmul(A, B)
    assert np.dtype(dtype).name in e.value.problem and 'dtype="float32"' in e.value.fix
    C = cache.matmul(A, B, dtype="float32")
    assert C.dtype == np.float32
    ref = A.astype(np.float32).astype(np.float64) @ B.astype(np.float32).astype(np.float64)
    assert close(C, ref, 4)
    still_works(cache)


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8])
def test_dtypes_numpy_promotes_to_float32_are_computed(cache, dtype):
    """float32 with float16, int8 or uint8 is float32 in numpy: computed, nothing refused."""
    A = rand(6, 4)
    B = (rand(4, 3) * 4).astype(dtype)
    C = cache.matmul(A, B)
    assert C.dtype == np.float32 and close(C, A.astype(np.float64) @ B.astype(np.float64), 4)


def test_lists_follow_numpy_dtypes(cache):
    with pytest.raises(vgpu.NotSupported):  # numpy makes int64 of them
        cache.matmul([[1, 2], [3, 4]], [[5], [6]])
    C = cache.matmul([[1, 2], [3, 4]], [[5], [6]], dtype="float32")
    assert C.tolist() == [[17.0], [39.0]]


@pytest.mark.parametrize("ashape,bshape", [
    ((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 3)), ((4, 5, 7), (7, 3)), ((5, 7), (4, 7, 3)),
    ((2, 1, 5, 7), (3, 7, 3)), ((0, 7), (7, 3)), ((5, 0), (0, 3)), ((3, 0, 5, 7), (7, 2)),
], ids=["vec_vec", "mat_vec", "vec_mat", "stack_mat", "mat_stack", "broadcast", "empty_rows", "k0", "empty_batch"])
def test_numpy_matmul_shapes(cache, ashape, bshape):
    A, B = rand(*ashape), rand(*bshape)
    want = A.astype(np.float64) @ B.astype(np.float64)
    C = cache.matmul(A, B)
    assert C.shape == want.shape and C.dtype == np.float32
    assert close(C, want, ashape[-1]) if C.size else True
    still_works(cache)


@pytest.mark.parametrize("bad", [
    np.ones((3, 3), np.complex64), np.ones((3, 3), bool), np.full((3, 3), 1.0, object),
    np.array([["a", "b"], ["c", "d"]]), None, "abc",
], ids=["complex", "bool", "object", "str", "None", "text"])
def test_refused_dtypes(cache, bad):
    for args in ((bad, np.ones((3, 3), np.float32)), (np.ones((3, 3), np.float32), bad)):
        with pytest.raises(vgpu.InvalidArgument) as e:
            cache.matmul(*args)
        check_invalid(e)
    still_works(cache)


def test_non_contiguous_inputs_give_right_results(cache):
    A = rand(9, 12)
    B = rand(9, 8)
    assert close(cache.matmul(A.T, B), A.T.astype(np.float64) @ B, 9)          # transposed view
    A2 = rand(6, 14)
    B2 = rand(7, 5)
    assert close(cache.matmul(A2[:, ::2], B2), A2[:, ::2].astype(np.float64) @ B2, 7)  # strided slice
    F = np.asfortranarray(rand(4, 4))
    assert close(cache.matmul(F, F), F.astype(np.float64) @ F, 4)


def test_zero_copy_input_is_not_modified(cache):
    A, B = rand(4, 4), rand(4, 4)
    A0, B0 = A.copy(), B.copy()
    cache.matmul(A, B)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)


def test_bad_out_arrays(cache):
    A, B = rand(4, 3), rand(3, 5)
    ro = np.zeros((4, 5), np.float32)
    ro.flags.writeable = False
    big = np.zeros((5, 8), np.float32)
    for out in (ro, np.zeros((4, 5), np.float64), big[:4, :5], np.zeros((5, 4), np.float32).T,
                np.zeros((4, 6), np.float32), np.zeros(20, np.float32), [[0.0] * 5] * 4):
        with pytest.raises(vgpu.InvalidArgument) as e:
            cache.matmul(A, B, out=out)
        check_invalid(e)
    assert not ro.any() and not big.any()  # nothing written into refused outputs
    still_works(cache)


def test_counters_are_unchanged_by_refused_calls(cache):
    before = (cache.compiles, cache.hits, cache.dispatches)
    with pytest.raises(vgpu.InvalidArgument):
        cache.matmul(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert (cache.compiles, cache.hits, cache.dispatches) == before


def test_kernel_database_errors_leave_it_usable():
    db = vgpu.KernelDatabase("cpu:0")
    with pytest.raises(vgpu.InvalidArgument) as e:
        db.get("nosuch", 4)
    check_invalid(e)
    with pytest.raises(vgpu.InvalidArgument) as e:
        db.get("matmul", (4, 4))
    check_invalid(e)
    k = db.get("matmul", (3, 4, 5))
    assert isinstance(k, vgpu.PersistentKernel)
    assert [(t.name, t.access) for t in k.tensors] == [("A", "read"), ("B", "read"), ("C", "write")]
    A, B = rand(3, 4), rand(4, 5)
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(A)                                # one input short
    check_invalid(e)
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(B, A)                             # wrong shapes for this kernel
    check_invalid(e)
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(A.astype(np.complex64), B)
    check_invalid(e)
    assert close(k(A, B), A.astype(np.float64) @ B, 4)


def test_kernel_database_other_builtin_ops():
    db = vgpu.KernelDatabase("cpu:0")
    x, y = rand(37), rand(37)
    assert np.allclose(db.get("add", 37)(x, y), x + y)
    assert np.allclose(db.get("mul", 37)(x, y), x * y)
    y0 = y.copy()
    r = db.get("axpy", 37)(np.array([2.0], np.float32), x, y)
    # y is read_write: updated in place, as PersistentKernel's call rule says, and returned.
    assert r is y and np.allclose(y, 2 * x + y0)
    assert np.allclose(db.get("reduce_sum", 37)(x), [x.astype(np.float64).sum()], atol=1e-4)
    s = rand(3, 5)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(db.get("softmax_rows", (3, 5))(s), e / e.sum(axis=1, keepdims=True), atol=1e-5)


def test_bad_devices_for_cache_and_database():
    for bad in (3, 2.0, object()):
        for cls in (vgpu.Cache, vgpu.KernelDatabase):
            with pytest.raises(vgpu.InvalidArgument) as e:
                cls(bad)
            check_invalid(e)
    for cls in (vgpu.Cache, vgpu.KernelDatabase):
        with pytest.raises((vgpu.InvalidArgument, vgpu.Unavailable)) as e:
            cls("nosuch:0")
        assert "Fix:" in str(e.value)
    info = [i for i in vgpu.devices() if i.backend == "cpu"][0]
    assert vgpu.Cache(info).device.id == info.id          # a DeviceInfo works too
    assert vgpu.KernelDatabase(vgpu.open("cpu:0")).device.id == "cpu:0"
    assert vgpu.Cache().device is None or isinstance(vgpu.Cache().device, vgpu.Device)
