# SPDX-License-Identifier: Apache-2.0
"""The seed's VGPUCache in moderngl — a RECONSTRUCTION, used only as a benchmark reference.

The design vgpu implements started as a Python prototype: a `VGPUCache` whose `matmul(A, B)` ran a
GLSL 4.30 compute shader through moderngl on numpy float32 arrays and reported
"VGPUCache: 1 compiles, 99 cache hits, 100 dispatches". Its source is not in this repository; this
file re-creates it from the design's description, as faithfully as that allows:

- one standalone, headless OpenGL context (`moderngl.create_standalone_context(backend='egl')`);
- a naive GLSL 430 compute matmul (one invocation per output element, 16x16 workgroups), with the
  shape baked into the source, so the program is compiled once per shape and cached in a dict;
- per shape, three SSBOs created with the program; every call writes A and B into them,
  dispatches, waits (the read) and reads C back into a new numpy array;
- counters compiles / hits / dispatches and the seed's report string.

It is not part of vgpu and not a dependency of the library: bench/python_overhead.py imports it
(and so moderngl, Debian's python3-moderngl) only for its reference columns, and skips them with
the reason when moderngl or an EGL context is missing.
"""

import numpy as np

_SHADER = """
#version 430
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer BufA { float A[]; };
layout(std430, binding = 1) readonly buffer BufB { float B[]; };
layout(std430, binding = 2) writeonly buffer BufC { float C[]; };
const uint M = %(M)du, K = %(K)du, N = %(N)du;
void main() {
    uint row = gl_GlobalInvocationID.y, col = gl_GlobalInvocationID.x;
    if (row >= M || col >= N) return;
    float acc = 0.0;
    for (uint k = 0u; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


class VGPUCache:
    """The seed's drop-in matmul: compile once per shape, then only write, dispatch and read."""

    def __init__(self, ctx=None):
        import moderngl  # only the benchmark needs it

        self.ctx = ctx or moderngl.create_standalone_context(require=430, backend="egl")
        self._kernels = {}  # (M, K, N) -> (program, bufA, bufB, bufC)
        self.compiles = 0
        self.hits = 0
        self.dispatches = 0

    @property
    def renderer(self):
        """The GL renderer string (e.g. 'llvmpipe (LLVM 15.0.6, 256 bits)')."""
        return self.ctx.info.get("GL_RENDERER", "?")

    def matmul(self, A, B):
        """Returns A @ B (float32) computed by the compute shader."""
        A = np.ascontiguousarray(A, dtype=np.float32)
        B = np.ascontiguousarray(B, dtype=np.float32)
        M, K = A.shape
        K2, N = B.shape
        if K != K2:
            raise ValueError(f"matmul: A is {M}x{K} but B is {K2}x{N}")
        key = (M, K, N)
        entry = self._kernels.get(key)
        if entry is None:
            program = self.ctx.compute_shader(_SHADER % {"M": M, "K": K, "N": N})
            entry = (program, self.ctx.buffer(reserve=M * K * 4), self.ctx.buffer(reserve=K * N * 4),
                     self.ctx.buffer(reserve=M * N * 4))
            self._kernels[key] = entry
            self.compiles += 1
        else:
            self.hits += 1
        program, buf_a, buf_b, buf_c = entry
        buf_a.write(A)
        buf_b.write(B)
        buf_a.bind_to_storage_buffer(0)
        buf_b.bind_to_storage_buffer(1)
        buf_c.bind_to_storage_buffer(2)
        program.run((N + 15) // 16, (M + 15) // 16, 1)
        self.dispatches += 1
        return np.frombuffer(buf_c.read(), dtype=np.float32).reshape(M, N)

    def report(self):
        """Returns the seed's report line."""
        return f"VGPUCache: {self.compiles} compiles, {self.hits} cache hits, {self.dispatches} dispatches"

    def release(self):
        """Frees the programs, buffers and the context."""
        for program, *buffers in self._kernels.values():
            for b in buffers:
                b.release()
            program.release()
        self._kernels.clear()
        self.ctx.release()


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    cache = VGPUCache()
    A = rng.standard_normal((16, 16), dtype=np.float32)
    B = rng.standard_normal((16, 16), dtype=np.float32)
    for _ in range(100):
        C = cache.matmul(A, B)
    assert np.allclose(C, A @ B, rtol=1e-4, atol=1e-4)
    print(cache.renderer)
    print(cache.report())
    cache.release()
