// SPDX-License-Identifier: Apache-2.0
// vgpu/cache.hpp — the seed's VGPUCache: a drop-in matmul that keeps its kernels warm.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/device_set.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/ops.hpp"

namespace vgpu {

/// A dense row-major float32 matrix, the value type of Cache::matmul.
struct VGPU_API Matrix {
  std::uint32_t rows = 0, cols = 0;
  std::vector<float> data;  ///< rows*cols values, row-major

  Matrix() = default;
  /// Makes a rows×cols matrix filled with value.
  Matrix(std::uint32_t r, std::uint32_t c, float value = 0.0f) : rows(r), cols(c), data(std::size_t{r} * c, value) {}
  /// Returns element (r, c).
  float& operator()(std::uint32_t r, std::uint32_t c) { return data[std::size_t{r} * cols + c]; }
  /// Returns element (r, c).
  float operator()(std::uint32_t r, std::uint32_t c) const { return data[std::size_t{r} * cols + c]; }
};

/// What spreading over a DeviceSet did: Cache::multi_stats, ShardedDatabase::stats,
/// QueuePipelineSet::stats (each says what its batches, splits and unsplit count). A plain value.
struct VGPU_API MultiStats {
  std::uint64_t batches = 0;  ///< matmul_batch calls spread over the set (ShardedDatabase: call_batch; queue set: runs)
  std::uint64_t splits = 0;   ///< matmul calls split by rows of C over the set (ShardedDatabase: spread)
  std::uint64_t unsplit = 0;  ///< matmul calls below split_min_work(), run on one device (ShardedDatabase: call)
  std::uint64_t failures = 0;              ///< devices that failed during a call (their share ran elsewhere)
  std::uint64_t rerun_items = 0;           ///< batch entries or rows of C rerun on other devices
  std::vector<std::uint32_t> last_shares;  ///< per device of the set: the last spread call's first split
  std::vector<std::uint64_t> items;        ///< per device of the set: entries or rows it computed so far
  std::vector<std::string> last_failures;  ///< "<id>: <error>" of the last call's failed devices
};

/// The seed's VGPUCache: matmul(A, B) on the selected device, compiling once per shape and
/// reusing the persistent kernel afterwards. report() reads
/// "VGPUCache: 1 compiles, 99 cache hits, 100 dispatches" after 100 same-shape calls.
/// Over a DeviceSet (docs/scale-out.md), matmul_batch spreads a batch and matmul splits the rows
/// of a large C across the devices, in proportion to their measured speed, each device on its
/// own thread; a device that fails has its share rerun on the others (and is demoted).
/// Bounded like its KernelDatabase (one per device over a set): at most 64 live persistent
/// kernels and 1 GiB of their buffers by default (RuntimeOptions::persistent_capacity /
/// persistent_max_bytes, VGPU_PERSISTENT_CAPACITY / VGPU_PERSISTENT_MAX_BYTES), least recently
/// used shape out; evictions() counts them. An evicted shape seen again allocates and binds
/// (its compiled program stays in the device's L1 cache) and counts as a compile here.
/// Thread-safety: safe to call from several threads (calls of one shape on one device are
/// serialised); over a set, no lock is held while devices work (a mutex guards the stats only).
class VGPU_API Cache {
 public:
  /// matmul work (m·k·n) below which a Cache over a set runs matmul on one device: 2^30
  /// (1024³; below it one H200 takes < ~70 µs, the order of a second device's round trip and
  /// thread handoff; docs/scale-out.md).
  static constexpr std::uint64_t kSplitMinWork = std::uint64_t{1} << 30;

  /// Runs each shape on the device measured fastest for it (Runtime::global().select; the
  /// choice persists across processes, a failing device falls back to the next).
  Cache();
  /// Uses the given device.
  explicit Cache(Device device);
  /// Spreads work over devices (each keeps its own persistent kernels); throws what opening one does.
  explicit Cache(DeviceSet devices);
  ~Cache();

  /// Returns A·B; throws invalid_argument when A.cols != B.rows or a matrix is empty. precision
  /// tf32 allows TF32 tensor cores where the device has them (the op "matmul_tf32", selected
  /// and cached apart from "matmul"; ops::Precision).
  Matrix matmul(const Matrix& a, const Matrix& b, ops::Precision precision = ops::Precision::highest);
  /// Computes C[m×n] = A[m×k]·B[k×n] from raw row-major pointers (precision as above).
  void matmul(const float* a, const float* b, float* c, std::uint32_t m, std::uint32_t k, std::uint32_t n,
              ops::Precision precision = ops::Precision::highest);

  /// Returns A_i·B_i for every pair, all of one shape (invalid_argument otherwise): over a set
  /// spread across its devices (DeviceSet::shares), else one after the other on this cache's
  /// device (precision as for matmul).
  std::vector<Matrix> matmul_batch(const std::vector<std::pair<Matrix, Matrix>>& pairs,
                                   ops::Precision precision = ops::Precision::highest);

  /// Returns how many calls had to build a persistent kernel (a new shape; per device over a set).
  std::uint64_t compiles() const;
  /// Returns how many calls reused a persistent kernel.
  std::uint64_t hits() const;
  /// Returns how many matmuls ran (each is one dispatch: the matmul plan has one step).
  std::uint64_t dispatches() const { return hits() + compiles(); }
  /// Returns how many persistent kernels the cache holds now (over a set: on all its devices).
  std::size_t size() const;
  /// Returns the bytes of device memory the persistent kernels it holds keep in their buffers.
  std::uint64_t buffer_bytes() const;
  /// Returns how many persistent kernels its bounds evicted (least recently used shapes).
  std::uint64_t evictions() const;
  /// Returns "VGPUCache: <compiles> compiles, <hits> cache hits, <dispatches> dispatches", with
  /// ", <n> evictions" once the bounds evicted any.
  std::string report() const;
  /// Returns the device the cache runs on (with selection: the device of the last call; over a
  /// set: its first device).
  Device device() const { return db_.device(); }
  /// Returns the device an m×k by k×n matmul of arrays of dtype at precision runs on: the
  /// cache's own device when it was given one (over a set: the set's first), else the device
  /// measured fastest for that dtype, precision and size class (vgpu::select(Runtime::global(),
  /// ops::matmul_op(precision), {m, k, n}, dtype): float16 and bfloat16 have size classes of
  /// their own). Python's Cache.matmul of 16-bit operands runs there.
  Device device_for(DType dtype, std::uint32_t m, std::uint32_t k, std::uint32_t n,
                    ops::Precision precision = ops::Precision::highest) const;
  /// Returns the device set this cache spreads over, or null for a one-device cache.
  const DeviceSet* devices() const noexcept;
  /// Returns what spreading over the set did (all zero without a set).
  MultiStats multi_stats() const;
  /// Sets the matmul work (m·k·n) from which matmul splits over the set (0: always; tests).
  void set_split_min_work(std::uint64_t work) noexcept;
  /// Returns the work from which matmul splits over the set (default kSplitMinWork).
  std::uint64_t split_min_work() const noexcept;

 private:
  struct Multi;  // the set's per-device databases and stats (core/runtime/multi/cache_multi.cpp)

  KernelDatabase db_;
  std::unique_ptr<Multi> multi_;
};

}  // namespace vgpu
