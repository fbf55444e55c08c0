// SPDX-License-Identifier: Apache-2.0
// vgpu/mpi.hpp — the optional MPI layer (libvgpu_mpi, vgpu::vgpu_mpi; built when VGPU_WITH_MPI):
// which device each rank uses, one warm kernel cache for the whole job, and scatter/gather of
// a batch of built-in op calls (matmul, add, mul, axpy, softmax_rows, reduce_sum) over the
// ranks, split by each rank's measured speed. It uses only vgpu's public API and MPI; libvgpu
// itself never links MPI. docs/scale-out.md, "Across ranks", describes the protocol and the failure behaviour.
//
// Failure: every collective of this layer runs on a duplicate of the caller's communicator with
// MPI_ERRORS_RETURN and is waited for with a deadline, so a rank that stops answering makes the
// others throw vgpu::Error (timeout) instead of hanging. After such an error the communicator's
// state is unknown: report the error and call MPI_Abort (Open MPI itself ends the whole job when
// a rank exits without MPI_Finalize).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vgpu/cache.hpp"
#include "vgpu/counters.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_database.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/types.hpp"

#if defined(VGPU_MPI_STATIC_DEFINE)
#define VGPU_MPI_API
#else
#define VGPU_MPI_API __attribute__((visibility("default")))
#endif

namespace vgpu::mpi {

/// Returns this rank's index among the ranks of comm on its host (MPI_Comm_split_type with
/// MPI_COMM_TYPE_SHARED). Collective over comm and blocking: call it at start-up.
VGPU_MPI_API int local_rank(MPI_Comm comm);
/// Returns how many ranks of comm run on this host. Collective over comm and blocking.
VGPU_MPI_API int local_size(MPI_Comm comm);

/// Returns the device this rank should use: VGPU_DEVICE (the runtime's forced device) when set;
/// else device local_rank % n of the first backend in registry order (CUDA, Vulkan, OpenGL) that
/// has a GPU — one backend only, as several backends list the same physical GPU; else the CPU.
/// Collective over comm (it calls local_rank).
VGPU_MPI_API Device pick_device(Runtime& runtime, MPI_Comm comm);

/// One op and shape to compile and calibrate in the warm-up. A plain value.
struct VGPU_MPI_API WarmUpItem {
  std::string op;         ///< a built-in op ("matmul", ...) or the name factory builds
  Shape shape;            ///< e.g. {m, k, n} for matmul
  PlanFactory factory{};  ///< empty: the built-in op
};

/// How warm_up() shares the cache. A plain value.
struct VGPU_MPI_API WarmUpOptions {
  /// directory: the first rank of each (host, cache directory) group compiles and calibrates, the
  /// others load from the shared directory (the L2 store's cross-process locking). bundle: rank 0
  /// of the job compiles, exports a cache bundle and broadcasts it to the first rank of every
  /// other group only (a communicator of the leaders), which imports it (for hosts or containers
  /// that do not share a directory); the members then load from their leader's directory.
  enum class Share { directory, bundle } share = Share::directory;
  /// The deadline of the whole call on each rank (a member waits for its leader's whole
  /// warm-up); zero: the runtime's VGPU_TIMEOUT_MS, or 10 minutes when that is zero (no limit).
  std::chrono::milliseconds timeout{0};
  /// Extra work to warm up (user kernels: Device::compile), run like the items.
  std::function<void(Runtime&)> work{};
};

/// What warm_up() did, on this rank and summed over the job. A plain value.
struct VGPU_MPI_API WarmUpReport {
  bool leader = false;                    ///< this rank compiled and calibrated first
  int groups = 0;                         ///< (host, cache directory) groups in the job
  int compiling_ranks = 0;                ///< ranks that compiled from nothing (groups, or 1 with bundle)
  CounterSnapshot local{};                ///< this rank's counters during warm_up
  std::uint64_t calibrations = 0;         ///< items this rank measured (Selection source calibrated)
  std::uint64_t job_source_compiles = 0;  ///< sum over ranks of source_compiles
  std::uint64_t job_calibrations = 0;     ///< sum over ranks of calibrations
  std::uint64_t bundle_bytes =
      0;  ///< bundle mode: the bundle's size on rank 0 and each group leader (0 on members: they get none)
  std::uint64_t bundle_bytes_received = 0;  ///< bundle mode: bytes this rank received (leaders other than rank 0)
  std::uint64_t job_bundle_bytes = 0;       ///< sum over ranks of bundle_bytes_received: (groups - 1) × the bundle
  double seconds = 0;                       ///< wall time of warm_up on this rank
  /// Returns "leader=1 groups=1 ... job_source_compiles=N job_calibrations=M".
  std::string to_string() const;
};

/// Compiles and calibrates items (then options.work) once per group or job, then on every
/// other rank from the cache, so the job pays one source compile per key. Collective over comm
/// (every rank passes the same items). Throws vgpu::Error: timeout when a rank does not answer
/// within options.timeout, unavailable when an MPI call fails, the leader's error (on the others
/// as unavailable naming the leader's rank) when its warm-up failed, invalid_argument when a
/// rank's cache is disabled.
VGPU_MPI_API WarmUpReport warm_up(MPI_Comm comm, Runtime& runtime, const std::vector<WarmUpItem>& items,
                                  const WarmUpOptions& options = {});

/// How a batch was split over the ranks (BatchOptions::report). A plain value.
struct VGPU_MPI_API BatchReport {
  std::vector<int> counts;     ///< per rank: the batch entries it computed (they sum to the batch)
  std::vector<double> speeds;  ///< per rank: calls per second it reported (0: no time; even: all 0)
  bool measured = false;       ///< true: counts follow the speeds; false: an even split
};

/// How a batch over the ranks runs (call_batch, matmul_batch). A plain value; pass the same
/// root, split and timeout on every rank.
struct VGPU_MPI_API BatchOptions {
  int root = 0;  ///< the rank that holds the inputs and receives the outputs
  /// The deadline of the whole call; zero: the limit of the device the cache or database runs
  /// on (Device::timeout(), its runtime's VGPU_TIMEOUT_MS), else its runtime's; 10 minutes when 0.
  std::chrono::milliseconds timeout{0};
  /// even: every rank gets count/size entries (the first count%size one more). measured: rank
  /// r gets a share in proportion to its device's speed for the op and size class (1 / the
  /// selection's timing of one call, Runtime::explain, which calibrates once per size class
  /// when nothing is stored; a rank without a time weighs the median of the others; none: even).
  enum class Split { even, measured } split = Split::measured;
  /// This rank's speed (calls per second) to use instead of the selection's timing: > 0 use
  /// it; 0 measure; < 0 this rank has no time (it weighs the median). Per rank; measured only.
  double speed = 0;
  /// The runtime whose selection gives the timings (measured) and the timeout's fallback; null:
  /// a Cache's DeviceSet's runtime, else Runtime::global(). Pass it when the cache's device
  /// comes from a Runtime of your own.
  Runtime* runtime = nullptr;
  /// Where to write how the batch was split (the same on every rank); null: nowhere.
  BatchReport* report = nullptr;
};

/// Runs a batch of count independent calls of one built-in op at one shape spread over the
/// ranks of comm, through each rank's db (its device, or its selection): inputs holds the op's
/// input tensors in declaration order (vgpu/ops.hpp: read and read_write ones), each packed
/// entry after entry (count × the tensor's elements floats); returns the output tensors (write
/// and read_write ones) packed the same way on the root, an empty vector elsewhere. count is
/// inputs[0].size() / its tensor's elements. Only the root's inputs are read; op, shape and the
/// options must be the same on every rank. Tensors per op: add, mul {n}: a, b -> out; axpy {n}:
/// a[1], x, y -> y; reduce_sum {n}: x -> out[1]; softmax_rows {rows, cols}: x -> out; matmul
/// {m, k, n}: A, B -> C. Collective over comm. Throws vgpu::Error: invalid_argument (on every
/// rank) for an unknown op, a malformed shape, ranks that disagree on them or on
/// BatchOptions::root or split (checked first, naming each rank's value), or the root's
/// inputs of the wrong count or size; timeout when a rank does not answer in time; unavailable
/// when an MPI call or another rank's share failed. Implemented in one readable file,
/// mpi/src/batch.cpp.
VGPU_MPI_API std::vector<std::vector<float>> call_batch(MPI_Comm comm, KernelDatabase& db, const std::string& op,
                                                        const Shape& shape,
                                                        const std::vector<std::vector<float>>& inputs,
                                                        const BatchOptions& options = {});

/// Computes c[i] = a[i]·b[i] for a batch of same-shape matmuls spread over the ranks of comm
/// (call_batch's protocol, each rank's share through cache; a cache over a DeviceSet spreads
/// the share over its devices and weighs their summed speed): returns the batch of C on the
/// root, an empty vector elsewhere. Only the root's a and b are read. Results equal one rank's.
/// Collective over comm. Throws vgpu::Error: invalid_argument (on every rank) for an empty
/// batch, mismatched shapes or ranks that disagree on BatchOptions::root or split, timeout
/// when a rank does not answer in time, unavailable when an MPI call or another rank's share
/// failed.
VGPU_MPI_API std::vector<Matrix> matmul_batch(MPI_Comm comm, Cache& cache, const std::vector<Matrix>& a,
                                              const std::vector<Matrix>& b, const BatchOptions& options = {});

}  // namespace vgpu::mpi
