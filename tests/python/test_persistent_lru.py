# SPDX-License-Identifier: Apache-2.0
"""A vgpu.Cache fed many distinct shapes keeps a bounded number of live persistent kernels (issue
29, item 6: every shape's kernel and buffers used to stay for the life of the Cache). Measured
through the cache's own stats and the device's counters, never the process's RSS, so the test
does not depend on what else the machine runs."""
import os
import subprocess
import sys

import numpy as np

import vgpu

DEFAULT_COUNT = 64  # the default bound on live persistent kernels (docs/python.md)


def test_cache_over_301_shapes_keeps_its_bound_and_frees_the_rest():
    cache = vgpu.Cache("cpu:0")
    B = (np.arange(16 * 16, dtype=np.float32).reshape(16, 16) % 7) - 3
    for i in range(301):
        A = (np.arange((16 + i) * 16, dtype=np.float32).reshape(16 + i, 16) % 5) - 2
        assert np.array_equal(cache.matmul(A, B), A @ B)  # small integers: exact
    assert cache.compiles == 301
    assert cache.size == DEFAULT_COUNT
    # Each kept kernel holds A, B and C, where the device stages them; the CPU device runs the
    # kernels on numpy's memory and holds none.
    held = sum(4 * (m * 16 + 16 * 16 + m * 16) for m in range(16 + 301 - DEFAULT_COUNT, 16 + 301))
    assert cache.buffer_bytes == (0 if cache.device.uses_host_memory else held)

    # A steady loop over a few shapes still held builds nothing.
    compiles = cache.compiles
    for _ in range(10):
        for m in (16 + 300, 16 + 290, 16 + 280):
            A = np.ones((m, 16), dtype=np.float32)
            assert np.array_equal(cache.matmul(A, B), A @ B)
    assert cache.compiles == compiles
    assert cache.size == DEFAULT_COUNT
    assert cache.evictions == 301 - DEFAULT_COUNT
    assert cache.report() == (f"VGPUCache: {compiles} compiles, 30 cache hits, {compiles + 30} dispatches, "
                              f"{301 - DEFAULT_COUNT} evictions")


def test_kernel_database_counts_its_evictions():
    db = vgpu.KernelDatabase("cpu:0")
    for n in range(1, DEFAULT_COUNT + 11):
        db.get("add", n)
    assert len(db) == DEFAULT_COUNT
    assert db.evictions == 10
    staged = sum(3 * 4 * n for n in range(11, DEFAULT_COUNT + 11))
    assert db.buffer_bytes == (0 if db.device.uses_host_memory else staged)
    assert db.report() == f"KernelDB: 0 hits, {DEFAULT_COUNT + 10} compiles, 10 evictions"


# vgpu.run(devices=[...]) keeps a QueuePipelineSet per (devices, config) with the kernel: bounded
# too. Run in a child whose environment sets the bound (read once per process) and two CPU
# devices; the device memory alive (allocated - freed bytes) is the measure.
QUEUE_SETS_CHILD = r"""
import vgpu

def live():
    c = vgpu.counters()
    return c["allocated_bytes"] - c["freed_bytes"]

kernel = vgpu.queue_kernels.add_one()
q = vgpu.PersistentQueue()
for i in range(512):
    q.push(i, bytes(64))
held = []
for k in range(8):  # eight configs (the launch size is part of one): eight sets with equal buffers
    rep = vgpu.run(kernel, q, max_items_per_launch=100 + k, devices=["cpu:0", "cpu:1"])
    assert [len(p) for _, p in rep.results] == [64] * 512
    assert all(p[:4] == bytes([1, 0, 0, 0]) for _, p in rep.results)
    held.append(live())
assert held[0] > 0 and held[1] > held[0], held
assert held[-1] == held[1], held  # two sets kept, the others freed
print("ok")
"""


def test_queue_sets_kept_per_kernel_are_bounded():
    env = dict(os.environ, VGPU_CPU_DEVICES="2", VGPU_BACKEND="cpu", VGPU_CACHE_DISABLE="1", VGPU_BACKGROUND="0",
               VGPU_PERSISTENT_CAPACITY="2")
    env.pop("VGPU_DEVICE", None)
    env.pop("VGPU_DEVICES", None)
    r = subprocess.run([sys.executable, "-c", QUEUE_SETS_CHILD], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
