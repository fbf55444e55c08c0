# SPDX-License-Identifier: Apache-2.0
"""vgpu.Cache(devices=[...]): a batch spread over 4 logical CPU devices, a split matmul, bad sets;
vgpu.QueuePipelineSet: one queue drained over them equals vgpu.run on one device.

The checks run in a child process with VGPU_CPU_DEVICES=4: the process-wide runtime reads it once,
and an earlier test of this process may already have made that runtime with one CPU device.
"""
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r"""
    import numpy as np
    import vgpu

    assert [d.id for d in vgpu.devices()] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"], vgpu.devices()
    rng = np.random.default_rng(18)

    def check(a, b, c):
        ref = a.astype(np.float64) @ b.astype(np.float64)
        bound = 2 * a.shape[1] * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
        assert c.shape == ref.shape and c.dtype == np.float32
        assert np.all(np.abs(c - ref) <= bound), float(np.max(np.abs(c - ref) - bound))

    cache = vgpu.Cache(devices=["cpu:0", "cpu:1", "cpu:2", "cpu:3"])
    assert cache.devices == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    pairs = [(rng.standard_normal((17, 33), dtype=np.float32), rng.standard_normal((33, 9), dtype=np.float32))
             for _ in range(10)]
    outs = cache.matmul_batch(pairs)
    assert len(outs) == 10
    for (a, b), c in zip(pairs, outs):
        check(a, b, c)
    s = cache.multi_stats()
    assert s["batches"] == 1 and sum(s["last_shares"]) == 10 and sum(s["items"]) == 10, s
    assert all(x > 0 for x in s["last_shares"]), s  # equal devices: every one gets a share

    cache.split_min_work = 0
    for m, k, n in [(1, 1, 1), (17, 33, 9), (3, 5, 7), (1000, 17, 1000)]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        check(a, b, cache.matmul(a, b))
    assert cache.multi_stats()["splits"] == 3

    for bad, fragment in [([], "empty"), (["cpu:0", "cpu:0"], "twice"), (["cpu:7"], "does not exist")]:
        try:
            vgpu.Cache(devices=bad)
        except vgpu.InvalidArgument as e:
            assert fragment in str(e) and "Fix:" in str(e), str(e)
        else:
            raise AssertionError(f"devices={bad} was accepted")
    try:
        cache.matmul_batch([pairs[0], (pairs[0][0][:, :5], pairs[0][1][:5])])
    except vgpu.InvalidArgument as e:
        assert "one shape" in str(e), str(e)
    else:
        raise AssertionError("a batch of two shapes was accepted")
    one = vgpu.Cache(device="cpu:1")  # matmul_batch on one device: in order, no set
    assert one.devices is None
    for (a, b), c in zip(pairs, one.matmul_batch(pairs)):
        check(a, b, c)
    print("ok")
""")


QUEUE_CHILD = textwrap.dedent(r"""
    import numpy as np
    import vgpu

    ids = ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    kernel = vgpu.queue_kernels.add_one()
    qs = vgpu.QueuePipelineSet(kernel, devices=ids)
    assert qs.devices == ids
    assert qs.left_out == [False] * 4
    rng = np.random.default_rng(18)
    runs = 0
    for count in (1, 3, 17, 1000):
        q = vgpu.PersistentQueue()
        for i in range(count):
            q.push(5000 + 3 * i, rng.integers(0, 256, size=int(i * 37 % 70), dtype=np.uint8).tobytes())
        got = qs.run(q)
        runs += 1
        one = vgpu.run(kernel, q, device="cpu:0")
        assert [r[0] for r in got.results] == [5000 + 3 * i for i in range(count)]
        assert got.results == one.results, count
        s = qs.stats()
        assert s["runs"] == runs and sum(s["last_shares"]) == count and s["failures"] == 0, s
    # vgpu.run(devices=...): the same bytes, through the set the kernel keeps.
    for _ in range(2):
        assert vgpu.run(kernel, q, devices=ids[1:]).results == one.results
    try:
        vgpu.run(kernel, q, device="cpu:0", devices=ids)
    except vgpu.InvalidArgument as e:
        assert "both" in str(e) and "Fix:" in str(e), str(e)
    else:
        raise AssertionError("device= and devices= were both accepted")
    assert abs(sum(qs.weights) - 1) < 1e-9 and all(w > 0 for w in qs.weights), qs.weights
    assert all(t > 0 for t in qs.seconds_per_item), qs.seconds_per_item

    # A cpu= Python kernel over the set: the GIL protocol holds with several device threads.
    def double_words(wg):  # the workgroup's items at once: entries as rows of 4 words
        inp, out = wg.buffer(0), wg.buffer(1)
        base, count = (int(v) for v in np.frombuffer(wg.params[:8], np.uint32))
        first = wg.global_offset[0]
        last = min(first + wg.workgroup_size[0], count)
        rows = inp[4 * (base + first): 4 * (base + last)].reshape(-1, 4)
        for item, (off, nbytes, out_off, cap) in enumerate(rows.tolist(), start=base + first):
            words = min(nbytes, cap) // 4
            out[out_off: out_off + words] = inp[off: off + words] * 2
            out[2 * item: 2 * item + 2] += np.array([4 * words, 1], dtype=np.uint32)
    pk = vgpu.QueueKernel(name="double_words", cpu=double_words)
    q = vgpu.PersistentQueue()
    for i in range(100):
        q.push_value(i, np.arange(i % 5, dtype=np.uint32) + i)
    py_set = vgpu.QueuePipelineSet(pk, devices=ids[:2])
    got = py_set.run(q)
    for i, (id_, data) in enumerate(got.results):
        assert id_ == i
        assert np.array_equal(np.frombuffer(data, dtype=np.uint32), (np.arange(i % 5, dtype=np.uint32) + i) * 2), i

    def refused(make, fragment):
        try:
            make()
        except vgpu.InvalidArgument as e:
            return fragment in str(e) and "Fix:" in str(e)
        return False

    assert refused(lambda: vgpu.QueuePipelineSet(kernel, devices=[]), "empty")
    assert refused(lambda: vgpu.QueuePipelineSet(kernel, devices=["cpu:0", "cpu:0"]), "twice")
    assert refused(lambda: vgpu.QueuePipelineSet(kernel, devices=["cpu:7"]), "does not exist")
    assert refused(lambda: vgpu.QueuePipelineSet("add_one", devices=ids), "vgpu.QueueKernel")
    print("ok")
""")



def run_child(code):
    env = dict(os.environ, VGPU_CPU_DEVICES="4", VGPU_BACKEND="cpu", VGPU_CACHE_DISABLE="1", VGPU_BACKGROUND="0")
    env.pop("VGPU_DEVICE", None)
    env.pop("VGPU_DEVICES", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_cache_over_a_device_set():
    run_child(CHILD)


def test_queue_over_a_device_set():
    run_child(QUEUE_CHILD)
