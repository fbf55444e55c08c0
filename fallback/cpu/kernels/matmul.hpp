// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/matmul.hpp — the built-in "matmul" kernel: a blocked, packed GEMM
// (GotoBLAS/BLIS structure) with an xsimd register-blocked micro-kernel, templated on the
// architecture. One workgroup computes its share of C (the CPU op tuner launches one for the
// whole product) across all threads: B packed once per K block and shared, A per task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "vgpu/kernels/kernel_abi.hpp"
#include "kernels/cpu_tiles.hpp"
#include "cpu_parallel.hpp"
#include "kernels/simd.hpp"

namespace vgpu::cpu::builtin {

/// Register and cache blocking for one architecture. MR×NR accumulators must fit in the
/// vector register file with room for the NR/W B vectors and one broadcast A value:
/// SSE2 6×8 and AVX2 6×16 use 12 of 16 registers; AVX-512 12×32 uses 24 of 32.
template <class Arch>
struct MatmulBlocking {
  static constexpr std::size_t W = Simd<Arch>::W;
  static constexpr std::size_t MR = W >= 16 ? 12 : 6;  ///< rows of C per micro-kernel
  static constexpr std::size_t NV = 2;                 ///< vectors of C per micro-kernel row
  static constexpr std::size_t NR = NV * W;            ///< columns of C per micro-kernel
  /// K depth per packed block: a KC×NR micro-panel of B (≤ 32 KiB) stays in L1 while the
  /// KC×MR micro-panels of A stream through from L2.
  static constexpr std::size_t KC = 256;
};

/// C[m×n] = A[m×k]·B[k×n], row-major float32; slots 0 = A, 1 = B, 2 = C.
template <class Arch>
struct Matmul {
  using S = Simd<Arch>;
  using V = typename S::V;
  using Blk = MatmulBlocking<Arch>;
  static constexpr std::size_t W = S::W, MR = Blk::MR, NV = Blk::NV, NR = Blk::NR, KC = Blk::KC;

  /// The operands of one matmul, as every tile sees them.
  struct Problem {
    const float* a;
    const float* b;
    float* c;
    std::size_t m, n, k;
  };

  /// Computes this workgroup's block of C: workgroup_id[0] picks the column block, [1] the row
  /// block. The blocks are derived from the grid (rows of C split evenly over num_workgroups[1],
  /// columns over [0], in whole micro-panels), so any grid covers C exactly once; the CPU op
  /// tuner launches one group for the whole product and the parallelism lives in gemm(), where
  /// packed B panels can be shared by every thread.
  static void run(const CpuWorkgroup& wg) {
    const auto& params = wg.params_as<vgpu::kernels::MatmulParams>();
    run_problem(wg, Problem{wg.buffer<const float>(0), wg.buffer<const float>(1), wg.buffer<float>(2), params.m,
                            params.n, params.k});
  }

  /// The built-in "matmul_batched": workgroup z computes one product of the stacks in slots
  /// 0, 1 and 2 (kernel_abi.hpp's MatmulBatchParams), x and y split it as run() does.
  static void run_batched(const CpuWorkgroup& wg) {
    const auto& q = wg.params_as<vgpu::kernels::MatmulBatchParams>();
    const std::size_t i = std::size_t{q.first} + wg.workgroup_id[2];
    const std::size_t ia = q.a_base + (i / q.inner) * q.a_outer + (i % q.inner) * q.a_inner;
    const std::size_t ib = q.b_base + (i / q.inner) * q.b_outer + (i % q.inner) * q.b_inner;
    const std::size_t m = q.m, n = q.n, k = q.k;
    run_problem(wg, Problem{wg.buffer<const float>(0) + ia * m * k, wg.buffer<const float>(1) + ib * k * n,
                            wg.buffer<float>(2) + (q.c_base + i) * m * n, m, n, k});
  }

  /// Computes this workgroup's block of pr's C (see run()).
  static void run_problem(const CpuWorkgroup& wg, const Problem& pr) {
    const std::size_t gx = wg.num_workgroups[0] ? wg.num_workgroups[0] : 1;
    const std::size_t gy = wg.num_workgroups[1] ? wg.num_workgroups[1] : 1;
    const std::size_t block_rows = S::div_up(S::div_up(pr.m, gy), MR) * MR;
    const std::size_t block_cols = S::div_up(S::div_up(pr.n, gx), NR) * NR;
    const std::size_t row0 = std::size_t{wg.workgroup_id[1]} * block_rows;
    const std::size_t col0 = std::size_t{wg.workgroup_id[0]} * block_cols;
    if (row0 >= pr.m || col0 >= pr.n) return;  // a grid larger than the matrix: nothing to do
    const std::size_t rows = S::min(block_rows, pr.m - row0), cols = S::min(block_cols, pr.n - col0);
    if (std::uint64_t{rows} * cols * pr.k <= kDirectWork) {
      direct(pr, row0, rows, col0, cols);
      return;
    }
    gemm(wg, pr, row0, rows, col0, cols);
  }

  /// Tiles of at most this many multiply-adds (64³) skip packing (direct()): packing A and B and
  /// padding to MR×NR micro-tiles cost more than the product there (AVX-512's 12×32 micro-tile
  /// computes 24×32 outputs for a 16×16 C). Measured on AVX2 (Cache::matmul, one thread):
  /// direct / packed 0.64 / 1.31 µs at 16, 1.07 / 1.89 at 24, 1.46 / 2.13 at 32, alike at 48 and
  /// 64 (B then still fits L1), 27.6 / 24.8 at 96, where packing wins.
  static constexpr std::uint64_t kDirectWork = 64 * 64 * 64;

  /// What direct() computes: C (ldc) = A (k columns) · B (ldb), cols columns wide.
  struct Direct {
    const float* a;
    const float* b;
    std::size_t ldb;
    float* c;
    std::size_t ldc, k, cols;
  };

  /// Computes C[row0 .. row0+rows, col0 .. col0+cols) straight from A and B, 4 rows at a time
  /// (independent accumulators hide the FMA latency and share each B load): row i of C is
  /// Σ_p A[i,p]·B[p, :], summed in p order. A C narrower than one vector reads B's columns
  /// zero-padded to a vector (this thread's scratch).
  static void direct(const Problem& pr, std::size_t row0, std::size_t rows, std::size_t col0, std::size_t cols) {
    Direct d{pr.a + row0 * pr.k, pr.b + col0, pr.n, pr.c + row0 * pr.n + col0, pr.n, pr.k, cols};
    if (cols < W) {
      float* pad = Scratch<Arch, Matmul>::get(pr.k * W);
      for (std::size_t p = 0; p < pr.k; ++p) {
        std::memcpy(pad + p * W, d.b + p * d.ldb, cols * sizeof(float));
        std::memset(pad + p * W + cols, 0, (W - cols) * sizeof(float));
      }
      d.b = pad;
      d.ldb = W;
    }
    std::size_t i = 0;
    for (; i + kDirectRows <= rows; i += kDirectRows) direct_rows<kDirectRows>(d, i);
    if (i < rows) direct_tail<kDirectRows - 1>(d, i, rows - i);
  }

  /// Rows per direct() block: RB×2 vector accumulators, two B vectors and a broadcast A value
  /// must fit the register file (AVX-512's 32: 8 rows, 19 registers; 16 elsewhere: 6, 15).
  static constexpr std::size_t kDirectRows = W >= 16 ? 8 : 6;

  /// direct_rows for the last `left` (< kDirectRows) rows from row i.
  template <std::size_t RB>
  static void direct_tail(const Direct& d, std::size_t i, std::size_t left) {
    if constexpr (RB > 0) {
      if (left == RB)
        direct_rows<RB>(d, i);
      else
        direct_tail<RB - 1>(d, i, left);
    }
  }

  /// direct() for the RB rows from row i, two vectors of columns at a time (RB×2 independent
  /// accumulators hide the FMA latency). Whole vectors only: the last one or two start at
  /// cols − W or cols − 2W, overlapping the ones before (rewriting a few columns with the same
  /// values), so no column is left to a scalar loop.
  template <std::size_t RB>
  static void direct_rows(const Direct& d, std::size_t i) {
    const float* a = d.a + i * d.k;
    float* c = d.c + i * d.ldc;
    const std::size_t wide = d.cols < W ? W : d.cols;    // a narrow C: one padded vector
    const std::size_t step = wide >= 2 * W ? 2 * W : W;  // C narrower than two vectors: one at a time
    for (std::size_t j = 0;; j += step) {
      const std::size_t at = S::min(j, wide - step);
      if (step == 2 * W)
        direct_tile<RB, 2>(d, a, c, at);
      else
        direct_tile<RB, 1>(d, a, c, at);
      if (at + step >= wide) break;
    }
  }

  /// RB rows × NVC vectors of C from column at. The loops over rows and vectors are unrolled
  /// so the accumulators live in registers: left rolled, GCC keeps them in a stack array and
  /// every FMA waits on a store and a reload (measured: 16×16 took 0.8 µs instead of ~0.15).
  template <std::size_t RB, std::size_t NVC>
  static void direct_tile(const Direct& d, const float* a, float* c, std::size_t at) {
    V acc[RB][NVC];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < RB; ++r)
#pragma GCC unroll 2
      for (std::size_t v = 0; v < NVC; ++v) acc[r][v] = V(0.0f);
    for (std::size_t p = 0; p < d.k; ++p) {
      const float* brow = d.b + p * d.ldb + at;
      V bv[NVC];
#pragma GCC unroll 2
      for (std::size_t v = 0; v < NVC; ++v) bv[v] = V::load_unaligned(brow + v * W);
#pragma GCC unroll 8
      for (std::size_t r = 0; r < RB; ++r) {
        const V av(a[r * d.k + p]);
#pragma GCC unroll 2
        for (std::size_t v = 0; v < NVC; ++v) acc[r][v] = S::fmadd(av, bv[v], acc[r][v]);
      }
    }
    if (d.cols < W) {
      alignas(64) float lanes[W];
      for (std::size_t r = 0; r < RB; ++r) {
        acc[r][0].store_aligned(lanes);
        std::memcpy(c + r * d.ldc, lanes, d.cols * sizeof(float));
      }
      return;
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < RB; ++r)
#pragma GCC unroll 2
      for (std::size_t v = 0; v < NVC; ++v) acc[r][v].store_unaligned(c + r * d.ldc + at + v * W);
  }

  /// One K block of one column block, as every task of it sees it.
  struct Panel {
    const Problem* pr;
    std::size_t row0, rows;            ///< the rows of C this block computes
    std::size_t col0, cols;            ///< its columns (≤ nc)
    std::size_t pc, kc;                ///< the K block
    float* bpack;                      ///< kc×cols of B, packed once in NR panels, read by every task
    std::size_t task_rows, task_cols;  ///< a task's rows (multiple of MR) and columns (of NR)
    std::size_t tasks_across, b_pieces, b_panels_per_piece;
  };

  /// Computes C[row0 .. row0+rows, col0 .. col0+cols) with the GotoBLAS loop order across
  /// threads: per column block (NC, sized so its packed B stays in the shared L3) and K block
  /// (KC), B is packed once, in parallel, into a buffer every thread reads; then tasks of
  /// task_rows × task_cols each pack their own A rows (first touch by the worker that reads
  /// them, L2-sized) and run the micro-kernel over them. Tasks are made small enough that every
  /// thread has several from the first block (≥ 4 per thread where the micro-panels allow),
  /// which also balances the last wave. Polls the dispatch's deadline between K blocks.
  static void gemm(const CpuWorkgroup& wg, const Problem& pr, std::size_t row0, std::size_t rows, std::size_t col0,
                   std::size_t cols) {
    const std::size_t k = pr.k;
    if (k == 0) {  // an empty sum: C is zero, and there is nothing to pack
      for (std::size_t r = 0; r < rows; ++r) std::memset(pr.c + (row0 + r) * pr.n + col0, 0, cols * sizeof(float));
      return;
    }
    const std::uint64_t work = std::uint64_t{rows} * cols * k;
    // Below ~1M multiply-adds a parallel loop costs more than it saves.
    const std::size_t threads = work < (std::uint64_t{1} << 20) ? 1 : parallelism();
    // NC: the packed B block (KC × NC floats) takes at most half of the L3, which all threads
    // share; at least 8 micro-panels.
    const std::size_t l3 = cache_bytes(3), l2 = cache_bytes(2);
    const std::size_t nc_max = S::div_up(S::min(S::div_up(cols, NR) * NR, (l3 / 2) / (KC * sizeof(float))), NR) * NR;
    const std::size_t nc = nc_max < 8 * NR ? 8 * NR : nc_max;
    // A task's A rows (task_rows × KC) take at most half of the L2, the rest holds C and B.
    const std::size_t mc_max = S::div_up(S::min(rows, (l2 / 2) / (KC * sizeof(float))), MR) * MR;
    // Two packed B blocks: while the tasks of K block p read one, the pieces of block p+1 are
    // packed into the other in the same parallel loop, so a K block costs one join, not two.
    const std::size_t bsize = KC * S::min(nc, S::div_up(cols, NR) * NR);
    float* const bbuf = Scratch<Arch, Panel>::get(2 * bsize);

    for (std::size_t jc = 0; jc < cols; jc += nc) {
      const std::size_t ncur = S::min(nc, cols - jc);
      // Split rows and columns (the longer side first, in elements) until there are enough
      // tasks or the tasks reach 2 micro-panels a side.
      std::size_t tr = mc_max < MR ? MR : mc_max, tc = S::div_up(ncur, NR) * NR;
      const std::size_t want = threads == 1 ? 1 : 4 * threads;
      while (S::div_up(rows, tr) * S::div_up(ncur, tc) < want) {
        const bool can_rows = tr >= 4 * MR, can_cols = tc >= 4 * NR;
        if (can_rows && (tr >= tc || !can_cols))
          tr = S::div_up(tr / 2, MR) * MR;
        else if (can_cols)
          tc = S::div_up(tc / 2, NR) * NR;
        else
          break;
      }
      const std::size_t panels = S::div_up(ncur, NR);
      const std::size_t pieces = threads == 1 ? 1 : S::min(panels, 2 * threads);
      Step step{};
      step.cur = Panel{&pr,
                       row0,
                       rows,
                       col0 + jc,
                       ncur,
                       0,
                       S::min(KC, k),
                       bbuf,
                       tr,
                       tc,
                       S::div_up(ncur, tc),
                       pieces,
                       S::div_up(panels, pieces)};
      step.cur.b_pieces = S::div_up(panels, step.cur.b_panels_per_piece);
      step.tasks = S::div_up(rows, tr) * step.cur.tasks_across;
      // The first K block's B: packed alone (nothing to compute yet).
      if (threads == 1)
        pack_b_piece(&step.cur, 0);
      else
        parallel_for(
            step.cur.b_pieces, [](void* ctx, std::size_t i) { pack_b_piece(ctx, i); }, &step.cur);
      for (std::size_t pc = 0; pc < k; pc += KC) {
        if (wg.expired()) return;  // the dispatch reports the timeout; C is left unfinished
        step.next = step.cur;
        step.next_pieces = 0;
        if (pc + KC < k) {
          step.next.pc = pc + KC;
          step.next.kc = S::min(KC, k - pc - KC);
          step.next.bpack = step.cur.bpack == bbuf ? bbuf + bsize : bbuf;
          step.next_pieces = step.next.b_pieces;
        }
        if (threads == 1) {
          for (std::size_t t = 0; t < step.tasks; ++t) compute_task(&step.cur, t);
          if (step.next_pieces) pack_b_piece(&step.next, 0);
        } else {
          // Pack pieces first in index order: they start in the first wave, long before the
          // next join that needs them.
          parallel_for(
              step.next_pieces + step.tasks,
              [](void* ctx, std::size_t i) {
                Step& st = *static_cast<Step*>(ctx);
                if (i < st.next_pieces)
                  pack_b_piece(&st.next, i);
                else
                  compute_task(&st.cur, i - st.next_pieces);
              },
              &step);
        }
        step.cur = step.next;
      }
    }
  }

  /// One parallel loop of gemm(): the tasks of K block cur, and the packing of block next.
  struct Step {
    Panel cur, next;
    std::size_t tasks, next_pieces;
  };

  /// Packs the i-th piece (b_panels_per_piece NR panels) of the panel's B block.
  static void pack_b_piece(void* ctx, std::size_t i) {
    const Panel& pn = *static_cast<const Panel*>(ctx);
    const std::size_t first = i * pn.b_panels_per_piece;
    const std::size_t count = pn.b_pieces == 1 ? S::div_up(pn.cols, NR) : pn.b_panels_per_piece;
    const std::size_t c0 = first * NR;
    if (c0 >= pn.cols) return;
    const std::size_t width = S::min(count * NR, pn.cols - c0);
    pack_b(pn.pr->b + pn.pc * pn.pr->n + pn.col0 + c0, pn.pr->n, width, pn.kc, pn.bpack + first * NR * pn.kc);
  }

  /// Task t of a panel: packs its task_rows of A (this thread's scratch) and runs the
  /// micro-kernel over its task_rows × task_cols of C, B micro-panel outer (it stays in L1
  /// while the A micro-panels stream from L2).
  static void compute_task(void* ctx, std::size_t t) {
    const Panel& pn = *static_cast<const Panel*>(ctx);
    const Problem& pr = *pn.pr;
    const std::size_t r0 = (t / pn.tasks_across) * pn.task_rows, c0 = (t % pn.tasks_across) * pn.task_cols;
    const std::size_t rows = S::min(pn.task_rows, pn.rows - r0), cols = S::min(pn.task_cols, pn.cols - c0);
    float* const apack = Scratch<Arch, Matmul>::get(S::div_up(pn.task_rows, MR) * MR * KC);
    pack_a(pr.a + (pn.row0 + r0) * pr.k + pn.pc, pr.k, rows, pn.kc, apack);
    const bool accumulate = pn.pc != 0;  // the first K block overwrites C, later ones add
    const std::size_t mpanels = S::div_up(rows, MR), npanels = S::div_up(cols, NR);
    float* const c = pr.c + (pn.row0 + r0) * pr.n + pn.col0 + c0;
    const std::size_t jp0 = c0 / NR;  // this task's first panel in the packed B block
    for (std::size_t jp = 0; jp < npanels; ++jp) {
      const float* bp = pn.bpack + (jp0 + jp) * NR * pn.kc;
      const std::size_t nr = S::min(NR, cols - jp * NR);
      // Prefetch the next B micro-panel into L2 while this one computes (it comes from L3).
      Prefetch next_b{};
      if (jp + 1 < npanels) next_b = {bp + NR * pn.kc, NR, NR, pn.kc};
      for (std::size_t ip = 0; ip < mpanels; ++ip) {
        const float* ap = apack + ip * MR * KC;
        const std::size_t mr = S::min(MR, rows - ip * MR);
        float* cp = c + ip * MR * pr.n + jp * NR;
        Cursor pf_b = next_b.slice(ip, mpanels), pf_a{};
        if (mr == MR && nr == NR)
          micro(pn.kc, ap, bp, cp, pr.n, accumulate, pf_b, pf_a);
        else
          micro_edge(pn.kc, ap, bp, cp, pr.n, accumulate, mr, nr, pf_b, pf_a);
      }
    }
  }

  /// Packs rows×kc of A (leading dimension lda) into MR-row panels that keep A's row-major
  /// order with a fixed row stride of KC ([r*KC + p]), zero-filling rows past `rows`.
  /// Why not the classic p-major ([p*MR + r]) layout: that is a transpose, which costs far
  /// more than the row copies here, and A is re-packed for every column tile. What packing
  /// must do is remove A's own stride (a power-of-two lda puts every row in the same L1
  /// sets); a KC stride does, and the micro-kernel's broadcasts then use constant offsets.
  static void pack_a(const float* a, std::size_t lda, std::size_t rows, std::size_t kc, float* out) {
    const std::size_t panels = S::div_up(rows, MR);
    for (std::size_t r = 0; r < panels * MR; ++r) {
      float* dst = out + r * KC;  // panel r/MR, row r%MR: (r/MR)*MR*KC + (r%MR)*KC
      if (r < rows)
        copy(a + r * lda, kc, dst);
      else
        for (std::size_t p = 0; p < kc; ++p) dst[p] = 0.0f;
    }
  }

  /// Copies n floats from src to the 64-byte-aligned dst with vector loads and stores.
  static void copy(const float* src, std::size_t n, float* dst) {
    std::size_t i = 0;
    for (; i + W <= n; i += W) V::load_unaligned(src + i).store_aligned(dst + i);
    for (; i < n; ++i) dst[i] = src[i];
  }

  static constexpr std::size_t kLine = 64 / sizeof(float);  ///< floats per cache line

  /// Walks a slice of a Prefetch one cache line per step(), so the micro-kernel can spread
  /// its prefetches over its K loop instead of stalling on a burst of them.
  struct Cursor {
    const float* row = nullptr;
    std::size_t ld = 0, lines = 0, line = 0, rows_left = 0;
    /// Prefetches the next line of the slice into L2 (nothing once the slice is done).
    void step() noexcept {
      if (rows_left == 0) return;
      __builtin_prefetch(row + line * kLine, 0, 2);
      if (++line == lines) {
        line = 0;
        row += ld;
        --rows_left;
      }
    }
  };
  /// A rows×width block of a row-major matrix (leading dimension ld) to prefetch into L2.
  struct Prefetch {
    const float* m = nullptr;
    std::size_t ld = 0, width = 0, rows = 0;
    /// Returns a cursor over the part-th of parts equal row slices.
    Cursor slice(std::size_t part, std::size_t parts) const {
      const std::size_t begin = rows * part / parts, end = rows * (part + 1) / parts;
      return Cursor{m + begin * ld, ld, S::div_up(width, kLine), 0, end - begin};
    }
  };

  /// Packs kc×cols of B (leading dimension ldb) into NR-column panels, p-major within a panel
  /// ([p*NR + c]), zero-padding columns past `cols`.
  static void pack_b(const float* b, std::size_t ldb, std::size_t cols, std::size_t kc, float* out) {
    const std::size_t panels = S::div_up(cols, NR);
    const std::size_t full = cols / NR;
    for (std::size_t p = 0; p < kc; ++p) {
      const float* src = b + p * ldb;
      for (std::size_t jp = 0; jp < full; ++jp) {
        float* dst = out + jp * NR * kc + p * NR;
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) V::load_unaligned(src + jp * NR + v * W).store_aligned(dst + v * W);
      }
      if (full < panels) {
        float* dst = out + full * NR * kc + p * NR;
        const std::size_t nr = cols - full * NR;
        for (std::size_t j = 0; j < nr; ++j) dst[j] = src[full * NR + j];
        for (std::size_t j = nr; j < NR; ++j) dst[j] = 0.0f;
      }
    }
  }

  /// Accumulates an MR×NR block: acc = Σ_p a[:,p]·b[p,:] (a: MR rows of stride KC, b: p-major
  /// NR-wide rows), one broadcast and NV FMAs per row per p; the accumulators stay in
  /// registers for the whole K block.
  static void block(std::size_t kc, const float* __restrict a, const float* __restrict b, V (&acc)[MR][NV],
                    Cursor& pf_b, Cursor& pf_a) {
#pragma GCC unroll 16
    for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = V(0.0f);
    for (std::size_t p = 0; p < kc; ++p) {
      // One prefetch per iteration, alternating B and A: enough to cover the next block.
      if (p & 1)
        pf_a.step();
      else
        pf_b.step();
      V bv[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) bv[v] = V::load_aligned(b + p * NR + v * W);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r) {
        const V ar(a[r * KC + p]);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = S::fmadd(ar, bv[v], acc[r][v]);
      }
    }
  }

  /// Full MR×NR block written straight into C (overwrite or accumulate).
  static void micro(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc, bool accumulate,
                    Cursor pf_b, Cursor pf_a) {
    V acc[MR][NV];
    block(kc, a, b, acc, pf_b, pf_a);
    if (accumulate) {
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v)
          (acc[r][v] + V::load_unaligned(c + r * ldc + v * W)).store_unaligned(c + r * ldc + v * W);
    } else {
#pragma GCC unroll 16
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(c + r * ldc + v * W);
    }
  }

  /// Edge block (mr < MR or nr < NR): computes the full padded block into a local buffer and
  /// writes back only the valid mr×nr part, so C is never touched out of bounds.
  static void micro_edge(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc, bool accumulate,
                         std::size_t mr, std::size_t nr, Cursor pf_b, Cursor pf_a) {
    V acc[MR][NV];
    block(kc, a, b, acc, pf_b, pf_a);
    alignas(64) float tmp[MR * NR];
    for (std::size_t r = 0; r < MR; ++r)
      for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_aligned(tmp + r * NR + v * W);
    for (std::size_t r = 0; r < mr; ++r)
      for (std::size_t j = 0; j < nr; ++j)
        c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[r * NR + j] : tmp[r * NR + j];
  }
};

}  // namespace vgpu::cpu::builtin
