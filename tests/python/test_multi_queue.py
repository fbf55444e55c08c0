# SPDX-License-Identifier: Apache-2.0
"""vgpu.QueuePipelineSet: one queue drained over 4 logical CPU devices equals vgpu.run on one.

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
    assert abs(sum(qs.weights) - 1) < 1e-9 and all(w > 0 for w in qs.weights), qs.weights
    assert all(t > 0 for t in qs.seconds_per_item), qs.seconds_per_item

    # A cpu= Python kernel over the set: the GIL protocol holds with several device threads.
    def double_words(wg):
        inp, out = wg.buffer(0), wg.buffer(1)
        base, count = np.frombuffer(wg.params[:8], np.uint32)
        for lx in range(wg.workgroup_size[0]):
            x = wg.global_offset[0] + lx
            if x >= count:
                return
            i = base + x
            off, nbytes, out_off, cap = inp[4 * i: 4 * i + 4]
            n = min(nbytes, cap) // 4
            out[out_off: out_off + n] = inp[off: off + n] * 2
            out[2 * i] = 4 * n
            out[2 * i + 1] += 1
    pk = vgpu.QueueKernel(name="double_words", cpu=double_words)
    q = vgpu.PersistentQueue()
    for i in range(100):
        q.push_value(i, np.arange(i % 5, dtype=np.uint32) + i)
    py_set = vgpu.QueuePipelineSet(pk, devices=ids[:2])
    got = py_set.run(q)
    for i, (id_, data) in enumerate(got.results):
        assert id_ == i
        assert np.array_equal(np.frombuffer(data, dtype=np.uint32), (np.arange(i % 5, dtype=np.uint32) + i) * 2), i

    for bad, fragment in [([], "empty"), (["cpu:0", "cpu:0"], "twice"), (["cpu:7"], "does not exist")]:
        try:
            vgpu.QueuePipelineSet(kernel, devices=bad)
        except vgpu.InvalidArgument as e:
            assert fragment in str(e) and "Fix:" in str(e), str(e)
        else:
            raise AssertionError(f"devices={bad} was accepted")
    try:
        vgpu.QueuePipelineSet("add_one", devices=ids)
    except vgpu.InvalidArgument as e:
        assert "vgpu.QueueKernel" in str(e), str(e)
    else:
        raise AssertionError("a str kernel was accepted")
    print("ok")
""")


def test_queue_over_a_device_set():
    env = dict(os.environ, VGPU_CPU_DEVICES="4", VGPU_BACKEND="cpu", VGPU_CACHE_DISABLE="1", VGPU_BACKGROUND="0")
    env.pop("VGPU_DEVICE", None)
    env.pop("VGPU_DEVICES", None)
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
