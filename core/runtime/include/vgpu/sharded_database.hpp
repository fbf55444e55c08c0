// SPDX-License-Identifier: Apache-2.0
// vgpu/sharded_database.hpp — a KernelDatabase per device of a DeviceSet: one call on the set's
// fastest device, a batch of calls spread over the set (docs/scale-out.md, "In one process").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vgpu/cache.hpp"
#include "vgpu/device_set.hpp"
#include "vgpu/export.hpp"
#include "vgpu/kernel_database.hpp"

namespace vgpu {

namespace detail {
struct ShardedState;  // the databases and stats (core/runtime/multi/sharded_database.cpp)
}  // namespace detail

/// One KernelDatabase per device of a DeviceSet (each with the built-in ops registered), and the
/// engine that spreads work over them: call_batch splits `count` calls of one (id, shape) in
/// proportion to the devices' measured speed (built-in ops: DeviceSet::weights, the selection's
/// timings; an id registered with add(): equal weights, since no timings exist for it), each
/// device's share on its own thread; a device that fails (compile error, out of memory,
/// unavailable, not supported, device lost past recovery) has its unfinished calls rerun on the
/// others and is left out afterwards (built-in ops: demoted for the size class; add()ed ids: left
/// out for that id by this database). Cache(DeviceSet) is built on it. Each device's database
/// is bounded by its runtime's persistent limits (KernelDatabase): evictions() sums them.
/// Thread-safety: every member is safe to call from several threads at once; a mutex guards the
/// statistics only and is never held while a device works; each device's KernelDatabase has its
/// own locking. The set's runtime must outlive the database.
class VGPU_API ShardedDatabase {
 public:
  /// Yields item i's tensors for call_batch; called on the device threads, several at once (it
  /// must be thread-safe), once per attempt at item i (again when i is rerun after a failure).
  using ArgsOf = std::function<std::vector<TensorArg>(std::uint32_t i)>;
  /// Computes items [begin, end) of a spread() on database db, setting done to the items it
  /// finished (a failure part way reruns only the rest); called on that device's own thread.
  using RangeWork =
      std::function<void(KernelDatabase& db, std::uint32_t begin, std::uint32_t end, std::uint32_t& done)>;

  /// Opens every device of devices and makes its database; throws what opening one does.
  explicit ShardedDatabase(DeviceSet devices);
  ~ShardedDatabase();
  ShardedDatabase(const ShardedDatabase&) = delete;
  ShardedDatabase& operator=(const ShardedDatabase&) = delete;

  /// Registers (or replaces) a kernel family under id on every device's database
  /// (KernelDatabase::add); its batches are then split by equal weights.
  void add(const std::string& id, PlanFactory factory, PlanStability stability = PlanStability::varies);
  /// Runs one call of id at shape on the set's fastest device for it (the largest weight; ties:
  /// the earlier); a device failure moves it to the next. Throws invalid_argument (with a Fix) for
  /// an unknown id or a shape the factory rejects, unavailable when no device is left.
  void call(const std::string& id, const Shape& shape, std::span<const TensorArg> args);
  /// Runs count calls of id at shape, call i on args_of(i), spread over the set by weight
  /// (count 0: nothing). Throws as call(); nothing of a failed device is lost (its calls rerun).
  void call_batch(const std::string& id, const Shape& shape, std::uint32_t count, const ArgsOf& args_of);
  /// The general form: items [0, count) of id, weighted by id at weight_shape, each device
  /// computing its ranges through work (e.g. rows of one matmul, each part its own shape).
  void spread(const std::string& id, const Shape& weight_shape, std::uint32_t count, const RangeWork& work);

  /// Returns each device's weight for id at shape (sums to 1; 0 for a device left out).
  std::vector<double> weights(const std::string& id, const Shape& shape) const;
  /// Returns the set.
  const DeviceSet& devices() const noexcept;
  /// Returns device i's database (i < devices().size(); invalid_argument past it).
  KernelDatabase& database(std::size_t i);
  /// Returns the sum over the devices of KernelDatabase::hits().
  std::uint64_t hits() const;
  /// Returns the sum over the devices of KernelDatabase::misses() (kernels built).
  std::uint64_t misses() const;
  /// Returns the sum over the devices of KernelDatabase::evictions() (kernels the bounds dropped).
  std::uint64_t evictions() const;
  /// Returns what spreading did: batches = call_batch calls, unsplit = call() calls, splits =
  /// spread() calls; per device shares, items, failures.
  MultiStats stats() const;
  /// Returns "ShardedDatabase: <n> devices, <hits> hits, <misses> compiles, <failures> failures",
  /// with ", <n> evictions" once the bounds evicted any.
  std::string report() const;

 private:
  // Not a nested class: a class nested in an exported one is exported too (with the typeinfo of
  // the lambdas its members make), and the library's ABI is the public API only.
  std::unique_ptr<detail::ShardedState> state_;
};

}  // namespace vgpu
