# SPDX-License-Identifier: Apache-2.0
"""vgpu.Array from Python on every device found: every dtype stored and read back, a chain of
ops that moves nothing to the host until asked (device counters prove it), np.matmul's shape
and dtype rules, zero-copy on the CPU (pointer identity, writes seen on both sides, no bytes
copied), DLPack with numpy and torch, and every misuse giving a vgpu.Error with a Fix."""
import ctypes
import sys

import numpy as np
import pytest

import vgpu
from core_devices import close, device_params

RNG = np.random.default_rng(31)
DTYPES = ["float32", "float64", "float16", "int32", "uint32", "int8", "uint8"]


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def check_error(e, category):
    assert e.value.category == category, str(e.value)
    assert str(e.value).endswith("Fix: " + e.value.fix) and e.value.fix


def moved(device, before):
    now = device.counters()
    return now["bytes_up"] - before["bytes_up"], now["bytes_down"] - before["bytes_down"]


@pytest.mark.parametrize("device_id", device_params())
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips(device_id, dtype):
    x = (RNG.standard_normal((3, 5, 7)) * 50).astype(dtype)
    a = vgpu.asarray(x, device=device_id)
    assert a.shape == (3, 5, 7) and a.dtype == np.dtype(dtype) and a.nbytes == x.nbytes
    assert a.device.id == device_id and len(a) == 3
    assert np.array_equal(a.numpy(), x) and np.array_equal(np.asarray(a), x)
    b = a.copy().reshape(105)
    assert b.shape == (105,) and np.array_equal(b.numpy(), x.ravel())
    z = vgpu.zeros((2, 0, 4), dtype, device=device_id)
    assert z.size == 0 and z.numpy().shape == (2, 0, 4)
    assert not vgpu.zeros((4, 4), dtype, device=device_id).numpy().any()
    w = vgpu.empty((3, 5, 7), dtype, device=device_id)
    w.write(x)
    assert np.array_equal(w.numpy(), x)


@pytest.mark.parametrize("device_id", device_params())
def test_a_chain_moves_nothing_until_read(device_id):
    dev = vgpu.open(device_id)
    a, b, d = rand(37, 53), rand(53, 29), rand(37, 29)
    A, B, D = (vgpu.asarray(v, device=dev, copy=True) for v in (a, b, d))
    vgpu.sum(vgpu.softmax_rows(A @ B + D))  # the first use of a shape plans it (and may time variants)
    before = dev.counters()
    F = vgpu.softmax_rows(A @ B + D)
    S = vgpu.sum(F)
    assert moved(dev, before) == (0, 0)
    f = F.numpy()
    if F.memory != "host":  # read back: only the array read moved
        assert moved(dev, before) == (0, f.nbytes)
    e = a.astype(np.float64) @ b + d
    ref = np.exp(e - e.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    assert np.abs(f - ref).max() < 1e-5
    assert abs(float(S.numpy()) - 37) < 1e-3
    Y = D.copy()
    vgpu.axpy(2.0, A @ B, Y)
    assert close(Y.numpy(), 2 * (a.astype(np.float64) @ b) + d, 53)


@pytest.mark.parametrize("device_id", device_params())
def test_devices_are_never_mixed_silently(device_id):
    A = vgpu.asarray(rand(4, 5), device=device_id)
    others = [i.id for i in vgpu.devices() if i.id != device_id]
    if not others:
        pytest.skip(f"only {device_id} is here: no second device to mix it with")
    other = others[0]
    B = vgpu.asarray(rand(5, 3), device=other)
    with pytest.raises(vgpu.InvalidArgument) as e:
        A @ B
    check_error(e, "invalid_argument")
    assert "to(device)" in e.value.fix
    C = A @ B.to(device_id)  # moved explicitly, it runs
    assert C.device.id == device_id
    with pytest.raises(vgpu.InvalidArgument):
        vgpu.asarray(A, device=other)


MATMUL_SHAPES = [
    ((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 3)), ((9, 13), (13, 6)), ((4, 5, 7), (7, 3)), ((5, 7), (4, 7, 3)),
    ((2, 1, 5, 7), (3, 7, 3)), ((3, 5, 7), (3, 7, 2)), ((0, 7), (7, 3)), ((5, 0), (0, 3)), ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("device_id", device_params())
@pytest.mark.parametrize("ashape,bshape", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_follows_numpy(device_id, ashape, bshape):
    a, b = rand(*ashape), rand(*bshape)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for got in (vgpu.matmul(a, b, device=device_id),
                (vgpu.asarray(a, device=device_id) @ vgpu.asarray(b, device=device_id)).numpy()):
        assert got.shape == want.shape and got.dtype == np.float32
        assert got.size == 0 or close(got, want, max(ashape[-1], 1))


@pytest.mark.parametrize("da,db,result", [
    ("float32", "float16", "float32"), ("float32", "int8", "float32"), ("uint8", "float32", "float32"),
    ("float32", "float64", "float64"), ("int32", "int32", "int32"), ("float32", "int32", "float64"),
    ("float16", "float16", "float16"), ("int8", "uint8", "int16"),
])
def test_matmul_dtypes_follow_numpy_promotion(da, db, result):
    a, b = (rand(4, 5) * 3).astype(da), (rand(5, 2) * 3).astype(db)
    assert np.result_type(a, b) == np.dtype(result)
    if result in ("float32", "float16"):  # the dtypes vgpu computes on (test_dtypes.py: float16's bounds)
        c = vgpu.matmul(a, b, device="cpu:0")
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert c.dtype == np.dtype(result)
        assert close(c, want, 5) if result == "float32" else np.allclose(c, want, rtol=2e-3, atol=2e-3)
        return
    with pytest.raises(vgpu.NotSupported) as e:  # never a silent downcast
        vgpu.matmul(a, b, device="cpu:0")
    assert result in e.value.problem
    check_error(e, "not_supported")
    c = vgpu.matmul(a, b, device="cpu:0", dtype="float32")  # the documented opt-in
    assert c.dtype == np.float32
    assert close(c, a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64), 5)


def test_cpu_arrays_use_numpy_memory_in_place():
    cpu = vgpu.open("cpu:0")
    a, b = rand(6, 4), rand(4, 5)
    A, B = vgpu.asarray(a, device=cpu), vgpu.asarray(b, device=cpu)
    assert A.data_ptr == a.ctypes.data and A.external and A.memory == "host"
    a[0, 0] = 100.0  # the array sees numpy's writes
    assert A.numpy()[0, 0] == 100.0
    view = A.numpy()  # and numpy sees the array's memory
    assert view.ctypes.data == a.ctypes.data
    refs = sys.getrefcount(a)
    del A, view
    assert sys.getrefcount(a) < refs  # the array let numpy's memory go
    # Cache.matmul and vgpu.matmul on the CPU copy nothing: the kernel reads numpy's memory and
    # writes the result into the returned array.
    cache = vgpu.Cache(cpu)
    cache.matmul(a, b)
    before = cpu.counters()
    c = cache.matmul(a, b)
    c2 = vgpu.matmul(a, b, device=cpu)
    out = np.empty((6, 5), np.float32)
    cache.matmul(a, b, out=out)
    assert moved(cpu, before) == (0, 0)
    for r in (c, c2, out):
        assert close(r, a.astype(np.float64) @ b, 4)
    # A read-only array is copied (kernels may write arrays), and copy=False says why not.
    ro = rand(3, 3)
    ro.flags.writeable = False
    assert not vgpu.asarray(ro, device=cpu).external
    with pytest.raises(vgpu.InvalidArgument) as e:
        vgpu.asarray(ro, device=cpu, copy=False)
    check_error(e, "invalid_argument")


def test_copy_false_on_cuda_maps_numpy_memory_and_other_gpus_refuse():
    """On CUDA, copy=False registers numpy's memory with the driver and maps it into the GPU's
    address space; a Vulkan driver with VK_EXT_external_memory_host (the device lists
    "host_memory_import": lavapipe, NVIDIA) imports it: either way the array is numpy's memory.
    Devices that cannot use host memory in place (OpenGL) say so."""
    gpus = [i for i in vgpu.devices() if i.backend in ("cuda", "vulkan", "opengl")]
    if not gpus:
        pytest.skip("no GPU device here (cuda, vulkan or opengl)")
    for info in gpus:
        dev = vgpu.open(info.id)
        a, b = rand(6, 4), rand(4, 5)
        if info.backend != "cuda" and "host_memory_import" not in info.features:
            with pytest.raises(vgpu.InvalidArgument) as e:
                vgpu.asarray(a, device=dev, copy=False)
            check_error(e, "invalid_argument")
            with pytest.raises(vgpu.NotSupported) as e:  # DLPack of host memory: the same refusal
                vgpu.from_dlpack(a, device=dev)
            assert "host memory" in e.value.problem
            check_error(e, "not_supported")
            continue
        D = vgpu.from_dlpack(a, device=dev)  # DLPack of host memory: used in place too
        assert D.data_ptr == a.ctypes.data and D.memory == "host"
        del D
        A = vgpu.asarray(a, device=dev, copy=False)
        assert A.data_ptr == a.ctypes.data and A.external and A.memory == "host"
        B = vgpu.asarray(b, device=dev)  # copied into the GPU's memory
        assert B.memory != "host" and not B.external
        assert close((A @ B).numpy(), a.astype(np.float64) @ b, 4)
        a[0, 0] = 100.0  # the array reads numpy's memory itself
        assert close((A @ B).numpy(), a.astype(np.float64) @ b, 4)
        # A result written by the GPU into numpy's memory: numpy() and the array interface
        # hand it out once the GPU's work on it has run.
        c = np.full((6, 5), np.nan, np.float32)
        C = vgpu.asarray(c, device=dev, copy=False)
        vgpu.matmul(A, B, out=C)
        assert close(C.numpy(), a.astype(np.float64) @ b, 4)
        assert close(np.asarray(C), a.astype(np.float64) @ b, 4)
        assert close(c, a.astype(np.float64) @ b, 4)
        del C
        refs = sys.getrefcount(a)
        del A
        dev.synchronize()
        # A release from a thread without the GIL is queued; vgpu's next call runs the queue.
        vgpu.asarray(np.zeros(1, np.float32), device=dev)
        assert sys.getrefcount(a) < refs  # unregistered and let go once its work had run


def test_dlpack_with_numpy_is_zero_copy_both_ways():
    cpu = vgpu.open("cpu:0")
    x = rand(5, 6)
    X = vgpu.from_dlpack(x)
    assert X.data_ptr == x.ctypes.data and X.device.id == "cpu:0"
    y = np.from_dlpack(X)
    assert y.ctypes.data == X.data_ptr
    x[1, 2] = -7.0
    assert y[1, 2] == -7.0 and X.numpy()[1, 2] == -7.0
    assert X.__dlpack_device__() == (1, 0)
    Z = vgpu.asarray(rand(3, 3), device=cpu) @ vgpu.asarray(rand(3, 3), device=cpu)
    z = np.from_dlpack(Z)
    assert z.ctypes.data == Z.data_ptr
    cap = x.__dlpack__()
    vgpu.from_dlpack(cap)
    with pytest.raises(vgpu.InvalidArgument) as e:  # a capsule is consumed once
        vgpu.from_dlpack(cap)
    check_error(e, "invalid_argument")
    with pytest.raises(vgpu.InvalidArgument) as e:  # not contiguous: refused, not copied silently
        vgpu.from_dlpack(rand(6, 6)[:, ::2])
    check_error(e, "invalid_argument")
    with pytest.raises(vgpu.InvalidArgument):
        vgpu.from_dlpack([1, 2, 3])


class _DLManagedTensorVersioned(ctypes.Structure):
    """The head of DLPack 1.0's DLManagedTensorVersioned (version, manager_ctx, deleter, flags)."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64)]


def _versioned_head(capsule):
    """The versioned tensor a "dltensor_versioned" capsule points to (ctypes, for the test only)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return _DLManagedTensorVersioned.from_address(get(capsule, b"dltensor_versioned"))


def test_dlpack_versioned_capsules_both_ways_and_unversioned_producers():
    """DLPack 1.0: a consumer asking max_version=(1, 0) gets a "dltensor_versioned" capsule
    (version 1.0; IS_COPIED set only for copy=True), vgpu asks producers for one and reads it,
    falls back to the unversioned protocol for producers without max_version, and refuses a
    read-only tensor (kernels may write an array) with a Fix."""
    cpu = vgpu.open("cpu:0")
    A = vgpu.asarray(rand(3, 4), device=cpu)
    cap = A.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    head = _versioned_head(cap)
    assert (head.major, head.minor) == (1, 0) and head.flags == 0
    B = vgpu.from_dlpack(cap)
    assert B.data_ptr == A.data_ptr and np.array_equal(B.numpy(), A.numpy())
    assert "dltensor" in repr(A.__dlpack__()) and "versioned" not in repr(A.__dlpack__())
    copied = A.__dlpack__(max_version=(1, 0), copy=True)
    assert _versioned_head(copied).flags == 2  # DLPACK_FLAG_BITMASK_IS_COPIED
    C = vgpu.from_dlpack(copied)
    assert C.data_ptr != A.data_ptr and np.array_equal(C.numpy(), A.numpy())
    assert vgpu.from_dlpack(A).data_ptr == A.data_ptr  # vgpu's own producer: versioned

    class Unversioned:  # a DLPack 0.x producer: no max_version keyword
        def __init__(self, x):
            self.x = x

        def __dlpack__(self, stream=None):
            return self.x.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    x = rand(2, 5)
    for _ in range(2):  # the second call knows the type takes no max_version
        X = vgpu.from_dlpack(Unversioned(x))
        assert X.data_ptr == x.ctypes.data

    class ReadOnly:
        def __dlpack__(self, stream=None, max_version=None):
            assert max_version == (1, 0), "vgpu did not ask for a versioned capsule"
            c = A.__dlpack__(max_version=max_version)
            _versioned_head(c).flags |= 1  # DLPACK_FLAG_BITMASK_READ_ONLY
            return c

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(vgpu.NotSupported) as e:
        vgpu.from_dlpack(ReadOnly())
    assert "read-only" in e.value.problem
    check_error(e, "not_supported")


@pytest.mark.parametrize("device_id", device_params())
def test_device_only_arrays_refuse_dlpack_with_a_fix(device_id):
    A = vgpu.asarray(rand(3, 3), device=device_id)
    if A.memory != "device_only":
        pytest.skip(f"{device_id} arrays are in {A.memory} memory, which DLPack exports")
    with pytest.raises(vgpu.NotSupported) as e:
        A.__dlpack__()
    check_error(e, "not_supported")
    assert np.array_equal(np.from_dlpack(A.to("cpu:0")), A.numpy())


def test_dlpack_with_torch_is_zero_copy_both_ways():
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    t = torch.rand(4, 7)
    T = vgpu.from_dlpack(t)
    assert T.data_ptr == t.data_ptr() and T.shape == (4, 7)
    t[0, 0] = 42.0
    assert T.numpy()[0, 0] == 42.0
    C = T @ vgpu.asarray(rand(7, 3), device="cpu:0")
    u = torch.from_dlpack(C)
    assert u.data_ptr() == C.data_ptr
    del t  # the array keeps torch's memory alive
    assert T.numpy()[0, 0] == 42.0
    bf = torch.rand(3, 5).to(torch.bfloat16)
    B = vgpu.from_dlpack(bf)
    assert B.dtype == "bfloat16" and B.data_ptr == bf.data_ptr()
    back = torch.from_dlpack(B)
    assert back.dtype == torch.bfloat16 and torch.equal(back, bf)
    with pytest.raises(vgpu.NotSupported) as e:  # int64 is not a vgpu dtype
        vgpu.from_dlpack(torch.arange(6))
    check_error(e, "not_supported")
    with pytest.raises(vgpu.InvalidArgument):
        vgpu.from_dlpack(torch.rand(4, 4).t())


def test_wrong_arguments_say_how_to_fix_them():
    cpu = vgpu.open("cpu:0")
    A = vgpu.asarray(rand(4, 5), device=cpu)
    for call, category in [
        (lambda: A @ vgpu.asarray(rand(4, 5), device=cpu), "invalid_argument"),
        (lambda: vgpu.matmul(np.float32(2), rand(2, 2), device=cpu), "invalid_argument"),
        (lambda: A.reshape(3, 7), "invalid_argument"),
        (lambda: vgpu.asarray(np.arange(4), device=cpu), "invalid_argument"),  # int64
        (lambda: vgpu.asarray(rand(2, 2), dtype="complex64", device=cpu), "invalid_argument"),
        (lambda: vgpu.add(A, vgpu.asarray(rand(5, 4), device=cpu)), "invalid_argument"),
        (lambda: vgpu.sum(vgpu.asarray(rand(3).astype(np.float64), device=cpu)), "not_supported"),
        (lambda: vgpu.matmul(A, A.reshape(5, 4), out=vgpu.zeros((5, 5), device=cpu)), "invalid_argument"),
    ]:
        with pytest.raises(vgpu.Error) as e:
            call()
        check_error(e, category)
    assert np.allclose((A @ A.reshape(5, 4)).numpy(), A.numpy() @ A.numpy().reshape(5, 4), atol=1e-5)


@pytest.mark.parametrize("device_id", device_params())
def test_persistent_kernels_take_and_return_arrays(device_id):
    dev = vgpu.open(device_id)
    k = vgpu.KernelDatabase(dev).get("matmul", (6, 4, 5))
    a, b = rand(6, 4), rand(4, 5)
    A, B = vgpu.asarray(a, device=dev, copy=True), vgpu.asarray(b, device=dev, copy=True)
    k(A, B)  # the first call
    before = dev.counters()
    C = k(A, B)  # the output is allocated on the device
    assert isinstance(C, vgpu.Array) and C.shape == (6, 5) and C.device.id == device_id
    out = vgpu.zeros((6, 5), device=dev)
    assert k(A, b, out=out) is not None  # a host input is wrapped on the kernel's device
    assert moved(dev, before)[1] == 0  # nothing read back yet
    assert close(C.numpy(), a.astype(np.float64) @ b, 4) and close(out.numpy(), a.astype(np.float64) @ b, 4)
    with pytest.raises(vgpu.InvalidArgument) as e:
        k(A, vgpu.asarray(rand(5, 4), device=dev))
    check_error(e, "invalid_argument")


def test_dlpack_with_torch_cuda_tensors_is_zero_copy():
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device here")
    if not any(i.backend == "cuda" for i in vgpu.devices()):
        pytest.skip("vgpu has no CUDA device here")
    t = torch.rand(64, 32, device="cuda")
    T = vgpu.from_dlpack(t)
    assert T.data_ptr == t.data_ptr() and T.memory == "cuda_device" and T.device.backend == "cuda"
    b = rand(32, 16)
    C = T @ vgpu.asarray(b, device=T.device)
    u = torch.from_dlpack(C)
    assert u.is_cuda and u.data_ptr() == C.data_ptr
    assert torch.allclose(u, t @ torch.from_numpy(b).cuda(), atol=1e-4)
    assert C.__cuda_array_interface__["data"][0] == C.data_ptr
    t.mul_(2)  # torch's write is seen by vgpu (the same memory)
    torch.cuda.synchronize()
    assert np.allclose(T.numpy(), t.cpu().numpy())
    with pytest.raises(vgpu.NotSupported) as e:  # CUDA memory cannot be used in place on the CPU device
        vgpu.from_dlpack(torch.rand(4, device="cuda"), device="cpu:0")
    check_error(e, "not_supported")
