# SPDX-License-Identifier: Apache-2.0
"""vgpu.PersistentQueue and vgpu.run: the design's add-one flow with 1000 items on every device,
an empty queue, payload sizes 0..N, results by id, bad payload types, user queue kernels."""

import numpy as np
import pytest

import vgpu
from threads_support import run_threads
from kernel_devices import backend, device, rng  # noqa: F401 — the fixture


def add_one_expected(payload):
    words = np.frombuffer(payload[: len(payload) // 4 * 4], np.uint32)
    return (words + np.uint32(1)).astype(np.uint32).tobytes()


def test_add_one_1000_items(device):
    q = vgpu.PersistentQueue()
    r = rng(7)
    payloads = {}
    for i in range(1000):
        p = r.integers(0, 2**32 - 1, size=int(r.integers(0, 9)), dtype=np.uint32).tobytes()
        payloads[5000 + i] = p
        q.push(5000 + i, p)
    assert len(q) == 1000
    rep = vgpu.run(vgpu.queue_kernels.add_one(), q, device=device)
    assert rep.kernel_launches >= 1 and rep.round_trips == 1
    assert len(rep.results) == 1000
    assert [i for i, _ in rep.results] == list(payloads)  # queue order, with the ids
    by_id = rep.by_id()
    for i, p in payloads.items():
        assert by_id[i] == add_one_expected(p), i
    assert "kernel_launches" in repr(rep)
    # The same pipeline again, a second time: same answers.
    rep2 = vgpu.run(vgpu.add_one_queue_kernel(), q, device=device)
    assert rep2.results == rep.results


def test_empty_queue_makes_no_launch(device):
    rep = vgpu.run(vgpu.queue_kernels.add_one(), vgpu.PersistentQueue(), device=device)
    assert rep.kernel_launches == 0 and rep.results == []


def test_payload_sizes_and_types(device):
    q = vgpu.PersistentQueue()
    sizes = list(range(0, 41))
    for n in sizes:
        q.push(n, bytes(range(n)))
    q.push(100, bytearray(b"\x01\x00\x00\x00"))
    q.push(101, memoryview(b"\x02\x00\x00\x00\x03\x00\x00\x00"))
    q.push(102, np.array([7, 8, 9], np.uint32))
    q.push_value(103, 41)
    q.push_value(104, [1, 2], dtype="uint32")
    rep = vgpu.run(vgpu.queue_kernels.add_one(), q, device=device)
    by_id = rep.by_id()
    for n in sizes:
        assert by_id[n] == add_one_expected(bytes(range(n))), n
    assert np.frombuffer(by_id[100], np.uint32).tolist() == [2]
    assert np.frombuffer(by_id[101], np.uint32).tolist() == [3, 4]
    assert np.frombuffer(by_id[102], np.uint32).tolist() == [8, 9, 10]
    assert np.frombuffer(by_id[103], np.uint32).tolist() == [42]
    assert np.frombuffer(by_id[104], np.uint32).tolist() == [2, 3]


def test_split_launches_and_output_bytes(device):
    q = vgpu.PersistentQueue()
    for i in range(100):
        q.push_value(i, i)
    rep = vgpu.run(vgpu.queue_kernels.add_one(), q, max_items_per_launch=30, device=device)
    assert rep.kernel_launches == 4
    assert [np.frombuffer(p, np.uint32)[0] for _, p in rep.results] == list(range(1, 101))
    rep = vgpu.run(vgpu.queue_kernels.add_one(), q, output_bytes=8, device=device)
    assert all(len(p) == 4 for _, p in rep.results)


def test_bad_payloads_and_ids():
    q = vgpu.PersistentQueue()
    q.push(1, b"abcd")
    for bad_id, payload in [(1, b"dup!"), (-1, b""), (2**64, b""), ("x", b""), (True, b"")]:
        with pytest.raises(vgpu.InvalidArgument) as e:
            q.push(bad_id, payload)
        assert "Fix:" in str(e.value)
    for payload in ["text", 42, None, [1, 2], np.zeros((4, 4), np.uint32)[:, 1]]:
        with pytest.raises(vgpu.InvalidArgument) as e:
            q.push(9, payload)
        assert "Fix:" in str(e.value)
    assert len(q) == 1
    small = vgpu.PersistentQueue(max_items=2)
    small.push(1, b"")
    small.push(2, b"")
    with pytest.raises(vgpu.InvalidArgument):
        small.push(3, b"")
    q.clear()
    assert len(q) == 0
    q.push(1, b"\x05\x00\x00\x00")  # the id is free again after clear
    rep = vgpu.run(vgpu.queue_kernels.add_one(), q, device="cpu:0")
    assert rep.results == [(1, b"\x06\x00\x00\x00")]
    with pytest.raises(vgpu.InvalidArgument):
        vgpu.run("add_one", q)
    with pytest.raises(vgpu.InvalidArgument):
        vgpu.run(vgpu.queue_kernels.add_one(), [b"x"])


def test_user_queue_kernels(device):
    q = vgpu.PersistentQueue()
    for i in range(50):
        q.push(i, np.arange(i % 5, dtype=np.uint32))
    be = backend(device)
    kernels = []
    if be in ("vulkan", "opengl"):
        kernels.append(vgpu.QueueKernel(name="body", glsl=vgpu.queue_kernels.add_one_glsl()))
        kernels.append(vgpu.QueueKernel(name="shader", glsl_shader=vgpu.queue_kernels.add_one_glsl_shader()))
        kernels.append(vgpu.queue_kernels.add_one_shader())
    elif be == "cuda":
        kernels.append(vgpu.QueueKernel(name="cuda", cuda=vgpu.queue_kernels.add_one_cuda(), entry="queue_add_one"))
    else:
        def body(wg):
            inp, out = wg.buffer(0), wg.buffer(1)
            base, count = np.frombuffer(wg.params[:8], np.uint32)
            for lx in range(wg.workgroup_size[0]):
                x = wg.global_offset[0] + lx
                if x >= count:
                    return
                i = base + x
                off, nbytes, out_off, cap = inp[4 * i: 4 * i + 4]
                n = min(nbytes, cap) // 4
                out[out_off: out_off + n] = inp[off: off + n] + 1
                out[2 * i] = 4 * n
                out[2 * i + 1] += 1
        kernels.append(vgpu.QueueKernel(name="py_add_one", cpu=body))
    for k in kernels:
        rep = vgpu.run(k, q, device=device)
        for i, p in rep.results:
            assert np.frombuffer(p, np.uint32).tolist() == [x + 1 for x in range(i % 5)], (k, i)


def test_cpu_queue_kernel_exception_and_threads():
    def body(wg):
        raise KeyError("no such item")

    q = vgpu.PersistentQueue()
    q.push(1, b"\x00" * 4)
    with pytest.raises(KeyError):
        vgpu.run(vgpu.QueueKernel(name="raises", cpu=body), q, device="cpu:0")

    def worker(seed):
        mine = vgpu.PersistentQueue()
        for i in range(200):
            mine.push_value(i, seed * 1000 + i)
        rep = vgpu.run(vgpu.queue_kernels.add_one(), mine, device="cpu:0")
        assert [np.frombuffer(p, np.uint32)[0] for _, p in rep.results] == [seed * 1000 + i + 1 for i in range(200)]

    run_threads(worker, 4)
