# SPDX-License-Identifier: Apache-2.0
"""vgpu.devices(), backends(), open(), default_device(), select(), explain(), counters(), ops()
and the Device type, on every device found here."""
import numpy as np
import pytest

import vgpu
from core_devices import device_params


def test_backends_list_every_backend_with_a_reason_when_unavailable():
    statuses = vgpu.backends()
    names = [s.name for s in statuses]
    assert set(names) <= {"cuda", "vulkan", "opengl", "cpu"} and "cpu" in names
    for s in statuses:
        assert isinstance(s.available, bool) and isinstance(s.compiled_in, bool)
        assert repr(s).startswith("BackendStatus('" + s.name + "'")
        if s.available:
            assert s.reason == ""
        else:
            assert s.reason, f"{s.name} is unavailable without a reason"
            assert "reason=" in repr(s)


def test_cuda_is_unavailable_here_with_a_reason():
    cuda = [s for s in vgpu.backends() if s.name == "cuda"]
    if not cuda or cuda[0].available:
        pytest.skip("CUDA is available (or not compiled in): nothing unavailable to check")
    assert cuda[0].available is False and cuda[0].reason


def test_devices_are_device_infos_with_ids():
    infos = vgpu.devices()
    assert infos, "no device at all (the CPU backend should always be there)"
    available = {s.name for s in vgpu.backends() if s.available}
    for i in infos:
        assert isinstance(i, vgpu.DeviceInfo)
        assert i.id == f"{i.backend}:{i.index}"
        assert i.backend in available
        assert len(i.fingerprint) == 16
        assert i.limits["max_workgroup_invocations"] > 0
        assert repr(i).startswith(f"DeviceInfo('{i.id}'")
    assert infos[-1].backend == "cpu"  # registry order: CPU last


@pytest.mark.parametrize("device_id", device_params())
def test_open_gives_the_device(device_id):
    d = vgpu.open(device_id)
    assert isinstance(d, vgpu.Device)
    assert d.id == device_id and d.backend == device_id.split(":")[0]
    assert d.info.id == device_id and d.name == d.info.name and d.kind == d.type
    assert d == vgpu.open(device_id) and hash(d) == hash(vgpu.open(device_id))
    assert repr(d).startswith(f"Device('{device_id}'")
    assert not d.lost
    c = d.counters()
    assert {"compiles", "l1_hits", "dispatches", "allocations", "l2_hits"} <= c.keys()
    # open(DeviceInfo) and Cache on it
    info = [i for i in vgpu.devices() if i.id == device_id][0]
    assert vgpu.open(info) == d
    before = d.counters()["dispatches"]
    A = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.allclose(vgpu.Cache(d).matmul(A, A.T), A @ A.T)
    assert d.counters()["dispatches"] > before


@pytest.mark.parametrize("device_id", device_params())
def test_timeout_get_set(device_id):
    d = vgpu.open(device_id)
    old = d.timeout_ms
    try:
        d.timeout_ms = 12345
        assert vgpu.open(device_id).timeout_ms == 12345  # every handle of it
        with pytest.raises(vgpu.InvalidArgument) as e:
            d.timeout_ms = -1
        assert "Fix:" in str(e.value)
        assert d.timeout_ms == 12345
    finally:
        d.timeout_ms = old
    d.synchronize()


@pytest.mark.parametrize("bad", ["nosuch:0", "cpu:7", "", "vulkan:x", "cpu:-1"])
def test_open_unknown_id_raises_with_fix(bad):
    with pytest.raises(vgpu.Error) as e:
        vgpu.open(bad)
    assert isinstance(e.value, (vgpu.InvalidArgument, vgpu.Unavailable)), type(e.value)
    assert "Fix:" in str(e.value) and e.value.fix
    # the runtime still works afterwards
    assert vgpu.open("cpu:0").id == "cpu:0"


def test_open_wrong_type():
    with pytest.raises(vgpu.InvalidArgument) as e:
        vgpu.open(3)
    assert "Fix:" in str(e.value)


def test_default_device_is_a_device():
    d = vgpu.default_device()
    assert isinstance(d, vgpu.Device)
    assert d.id in {i.id for i in vgpu.devices()}


def test_ops_names():
    names = vgpu.ops()
    assert {"matmul", "add", "mul", "axpy", "reduce_sum", "softmax_rows"} <= set(names)


def test_select_and_explain():
    d = vgpu.select("matmul", 8)
    assert isinstance(d, vgpu.Device)
    s = vgpu.explain("matmul", (8, 8, 8))
    assert isinstance(s, vgpu.Selection)
    assert s.op == "matmul" and s.shape == (8, 8, 8)
    assert s.device == d.id  # same size class: the same choice
    assert s.source in {"calibrated", "persisted", "forced", "fallback", "only", "interim"}
    assert s.candidates and all(isinstance(c, vgpu.SelectionCandidate) for c in s.candidates)
    ids = {i.id for i in vgpu.devices()}
    for c in s.candidates:
        assert c.device in ids
        if c.eligible:
            assert c.seconds > 0
        assert c.check in {"passed", "wrong", "unchecked"} and c.check_error >= 0
        assert not (c.eligible and c.check == "wrong")  # a wrong result is never eligible
        assert repr(c).startswith(f"SelectionCandidate('{c.device}'")
    assert str(s) == s.describe() and s.device in str(s)
    assert repr(s).startswith("Selection(op='matmul', shape=(8, 8, 8), device=")
    assert vgpu.open(s.device) == d
    # an int shape for an elementwise op means (n,)
    assert vgpu.explain("add", 100).shape == (100,)
    assert vgpu.explain("softmax_rows", 4).shape == (4, 4)


@pytest.mark.parametrize("op,shape,exc", [
    ("nosuch", 8, vgpu.InvalidArgument),
    ("matmul", (8, 8), vgpu.InvalidArgument),
    ("matmul", "8", vgpu.InvalidArgument),
    ("matmul", (8, -1, 8), vgpu.InvalidArgument),
    ("matmul", (8, 2.5, 8), vgpu.InvalidArgument),
])
def test_select_bad_arguments(op, shape, exc):
    with pytest.raises(exc) as e:
        vgpu.select(op, shape)
    assert "Fix:" in str(e.value) and e.value.category == "invalid_argument"


def test_global_counters_dict():
    vgpu.Cache("cpu:0").matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    c = vgpu.counters()
    assert isinstance(c, dict) and c["dispatches"] >= 1
    assert all(isinstance(v, int) for v in c.values())
    assert set(c) == set(vgpu.open("cpu:0").counters())


def test_help_is_useful():
    assert "VGPUCache" in vgpu.Cache.__doc__
    assert "zero-copy" in vgpu.Cache.matmul.__doc__
    assert "KernelDB" in vgpu.KernelDatabase.__doc__
    assert vgpu.devices.__doc__ and vgpu.explain.__doc__ and vgpu.Device.__doc__


def test_settle_and_background_stats():
    # A default Cache at a size class nothing has chosen yet: with background work on (the
    # default) the first call may run on the CPU while the devices are measured; either way,
    # after settle() nothing is in flight and explain() gives a final choice.
    A = np.arange(33 * 17, dtype=np.float32).reshape(33, 17) / 100
    B = np.arange(17 * 29, dtype=np.float32).reshape(17, 29) / 100
    C = vgpu.Cache().matmul(A, B)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    assert vgpu.settle(600) is True
    stats = vgpu.background_stats()
    assert set(stats) == {"interim", "rechecks", "finished", "switches", "failed", "cancelled"}
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())
    assert stats["finished"] + stats["failed"] + stats["cancelled"] <= stats["interim"]
    s = vgpu.explain("matmul", (33, 17, 29))
    assert s.source != "interim"
    with pytest.raises(vgpu.InvalidArgument) as e:
        vgpu.settle(-1)
    assert "Fix:" in str(e.value)


@pytest.mark.parametrize("device_id", device_params())
def test_device_timing_reports_each_dispatch_on_the_device_clock(device_id):
    d = vgpu.open(device_id)
    if not d.can_time_dispatches:
        with pytest.raises(vgpu.NotSupported, match="Fix:"):
            d.device_timing = True
        pytest.skip(f"{device_id} cannot time dispatches on the device")
    rng = np.random.default_rng(7)
    A = rng.standard_normal((96, 80)).astype(np.float32)
    B = rng.standard_normal((80, 72)).astype(np.float32)
    try:
        d.device_timing = True
        assert d.device_timing
        before = d.counters()
        kept = len(d.dispatch_times())
        assert np.allclose(vgpu.Cache(d).matmul(A, B), A @ B, atol=1e-4)
        after = d.counters()
        times = d.dispatch_times()
        timed = after["timed_dispatches"] - before["timed_dispatches"]
        assert timed >= 1 and len(times) == kept + timed
        new = times[kept:]
        for kernel, begin, end in new:
            assert isinstance(kernel, str) and kernel
            assert 0 <= begin <= end
        assert all(a[2] <= b[1] for a, b in zip(new, new[1:])), new  # in order, never overlapping
        assert after["device_ns"] - before["device_ns"] == sum(e - b for _, b, e in new)
    finally:
        d.device_timing = False
    assert not d.device_timing
