#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""mpi_matmul.py — vgpu in an MPI job from Python (mpi4py + the vgpu module; docs/python.md, "MPI").

    mpirun -np 4 python3 python/examples/mpi_matmul.py [--count 17] [--shape 17 33 9]

What each rank does, as vgpu::mpi does in C++ (docs/scale-out.md, "Across ranks"):
  1. device: VGPU_DEVICE when set, else device local_rank % n of the first backend (CUDA,
     Vulkan, OpenGL) with a GPU, else cpu:0; the local rank from Split_type(COMM_TYPE_SHARED);
  2. one warm cache: rank 0 of each host compiles and calibrates first (into VGPU_CACHE_DIR,
     shared by the host's ranks), a barrier of the host, then the others, which load it all;
     the job's source compiles (vgpu.counters()) are summed and equal one rank's per host;
  3. a batch of matmuls, split by each rank's measured speed (the selection's timing of its
     device), scattered with Scatterv, computed, gathered with Gatherv and checked against numpy.

Exit 0 when the results and the counts are right, 1 otherwise; "SKIPPED" and 0 without mpi4py.
"""
import argparse
import os
import sys

import numpy as np

try:
    from mpi4py import MPI
except ImportError:
    print("SKIPPED: mpi4py is not installed (Debian: apt-get install python3-mpi4py)")
    sys.exit(0)

import vgpu

# A user kernel (a complete GLSL shader): compiled from source at run time, unlike the built-in
# matmul (precompiled), so it is the key whose compiles the shared cache must not repeat.
SHADER = """#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < x.length()) y[i] = 2.0 * x[i] + 1.0; }
"""


def pick_device(local_rank):
    """The device id this rank uses: VGPU_DEVICE, else local_rank % n of the first GPU backend."""
    forced = os.environ.get("VGPU_DEVICE")
    if forced:
        return forced
    found = vgpu.devices()  # in registry order: the preferred backend first
    gpus = [d for d in found if d.type != "cpu"]
    if gpus:  # one backend only: CUDA, Vulkan and OpenGL list the same GPUs
        gpus = [d for d in gpus if d.backend == gpus[0].backend]
        return gpus[local_rank % len(gpus)].id
    return next(d.id for d in found if d.type == "cpu")  # the CPU fallback every build has


def warm(device_id, shape):
    """Selects (calibrates once) matmul at shape and compiles the user kernel on device_id;
    returns (source compiles, calibrations) this rank made."""
    before = vgpu.counters()["source_compiles"]
    calibrated = vgpu.explain("matmul", shape).source == "calibrated"
    device = vgpu.open(device_id)
    if "glsl_shader" in device.dialects:
        n = 256
        k = vgpu.PersistentKernel(name="mpi_example.double", glsl_shader=SHADER, device=device,
                                  tensors=[("x", np.float32, (n,), "read"), ("y", np.float32, (n,), "write")],
                                  groups=((n + 63) // 64,))
        x = np.arange(n, dtype=np.float32)
        assert np.array_equal(k(x), 2 * x + 1)
    return vgpu.counters()["source_compiles"] - before, int(calibrated)


def speed(device_id, shape):
    """Calls per second of device_id for matmul at shape (the selection's timing), 0 if none."""
    for c in vgpu.explain("matmul", shape).candidates:
        if c.device == device_id and c.eligible and not c.demoted and c.seconds > 0:
            return 1.0 / c.seconds
    return 0.0


def split(speeds, count):
    """Counts per rank in proportion to speeds (a rank without one: the median), by largest
    remainder, so they sum to count; the same on every rank (the same gathered values)."""
    known = sorted(s for s in speeds if s > 0)
    if not known:
        return [count // len(speeds) + (i < count % len(speeds)) for i in range(len(speeds))]
    median = float(np.median(known))
    w = [s if s > 0 else median for s in speeds]
    exact = [count * x / sum(w) for x in w]
    parts = [int(e) for e in exact]
    order = sorted(range(len(w)), key=lambda i: -(exact[i] - parts[i]))  # stable: ties to the earlier
    for i in order[: count - sum(parts)]:
        parts[i] += 1
    return parts


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=17, help="matmuls in the batch (default 17)")
    p.add_argument("--shape", type=int, nargs=3, default=[17, 33, 9], metavar=("M", "K", "N"))
    args = p.parse_args()
    m, k, n = args.shape
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    host = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local = host.Get_rank()
    device_id = pick_device(local)
    ok = True

    # One warm cache: the host's rank 0 first, then (after the host's barrier) the others.
    mine = (0, 0)
    if local == 0:
        mine = warm(device_id, (m, k, n))
    host.Barrier()
    if local != 0:
        mine = warm(device_id, (m, k, n))
    job = comm.allreduce(mine[0], op=MPI.SUM)
    leaders = comm.allreduce(mine[0] if local == 0 else 0, op=MPI.SUM)
    hosts = comm.allreduce(1 if local == 0 else 0, op=MPI.SUM)
    job_calibrations = comm.allreduce(mine[1], op=MPI.SUM)
    if local != 0 and mine != (0, 0):
        print(f"rank {rank}: FAILED: compiled {mine[0]} sources and calibrated {mine[1]} after its host's leader")
        ok = False
    if rank == 0:
        print(f"job source compiles {job} == one rank's per host {leaders} ({hosts} host(s)); "
              f"job calibrations {job_calibrations}")

    # The batch: shares by measured speed, A and B scattered, C gathered on rank 0.
    counts = split(comm.allgather(speed(device_id, (m, k, n))), args.count)
    displs = [sum(counts[:i]) for i in range(size)]
    a = b = c = None
    if rank == 0:
        rng = np.random.default_rng(1)
        a = rng.uniform(-1, 1, (args.count, m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (args.count, k, n)).astype(np.float32)
        c = np.empty((args.count, m, n), np.float32)
    my_a = np.empty((counts[rank], m, k), np.float32)
    my_b = np.empty((counts[rank], k, n), np.float32)
    comm.Scatterv([a, [x * m * k for x in counts], [x * m * k for x in displs], MPI.FLOAT], my_a, root=0)
    comm.Scatterv([b, [x * k * n for x in counts], [x * k * n for x in displs], MPI.FLOAT], my_b, root=0)
    cache = vgpu.Cache(device_id)
    my_c = np.stack([cache.matmul(x, y) for x, y in zip(my_a, my_b)]) if counts[rank] else np.empty((0, m, n), np.float32)
    comm.Gatherv(my_c, [c, [x * m * n for x in counts], [x * m * n for x in displs], MPI.FLOAT], root=0)
    if rank == 0:
        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
        tol = 1e-5 * np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)) + 1e-6
        bad = int(np.count_nonzero(np.abs(c - ref) > tol))
        print(f"batch of {args.count} x {m}x{k}x{n} over {size} rank(s), counts {counts}: "
              f"{'right' if bad == 0 else f'{bad} wrong elements'} (against numpy)")
        ok = ok and bad == 0
    ok = comm.allreduce(0 if ok else 1, op=MPI.MAX) == 0
    if rank == 0:
        print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
