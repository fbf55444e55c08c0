# SPDX-License-Identifier: Apache-2.0
"""vgpu: compute kernels on CUDA, Vulkan, OpenGL or the CPU, compiled once and dispatched many times.

The seed's Python usage, on vgpu:

    import numpy as np, vgpu
    cache = vgpu.Cache()
    for _ in range(100):
        C = cache.matmul(A, B)          # numpy float32 in, numpy float32 out
    print(cache.report())               # VGPUCache: 1 compiles, 99 cache hits, 100 dispatches

Every failure raises a subclass of vgpu.Error whose str() ends with a 'Fix:' hint
(docs/python.md lists them).
"""

from ._vgpu import *  # noqa: F401,F403 — the extension defines the whole surface
from ._vgpu import __version__  # noqa: F401
