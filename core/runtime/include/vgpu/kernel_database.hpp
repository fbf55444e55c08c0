// SPDX-License-Identifier: Apache-2.0
// vgpu/kernel_database.hpp — persistent kernels looked up by kernel id and shape.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/lru_map.hpp"  // PersistentLimits
#include "vgpu/persistent_kernel.hpp"

namespace vgpu {

class Runtime;
namespace detail {
class KernelDatabaseImpl;
}  // namespace detail

/// How KernelDatabase::get() knows that a registered factory's kernel is still current.
enum class PlanStability {
  /// The plan may change between calls for the same (id, shape, device), e.g. through captured
  /// state: every get() asks the factory and looks the kernel up by the plan's content hash,
  /// so a changed plan rebuilds (a hit costs one plan build and hash). add()'s default.
  varies,
  /// The plan depends only on (DeviceInfo, shape) and the registration: get() finds the kernel
  /// by (id, shape, device) and asks the factory only on a miss (a hit builds nothing). To
  /// change such a family, register it again with add() (which drops its kernels). The
  /// built-in ops are registered so.
  fixed,
};

/// Returns cached PersistentKernels by (kernel id, shape). A kernel is built only when the
/// shape, the device or the registration changes, or, for a PlanStability::varies factory,
/// when the plan's content (source, specialisation, tensors, binding topology) changes.
/// The built-in ops are registered (PlanStability::fixed).
/// On a fixed device, or with measured selection (Runtime::select per id and size class; a
/// device that fails in call() is demoted and the call runs on the next one).
/// A CPU callable in a plan is identified by its type and DialectSource::version (captured state
/// cannot be compared): bump version when a factory's callable starts behaving differently.
/// Thread-safety: every member function is safe to call from several threads at once. The
/// database's mutex guards only its maps and counters: factories (user code), device selection
/// (calibration) and PersistentKernel builds run without it held, once per key (single
/// flight: concurrent first calls for one key build once, the others wait for that build;
/// calls for other keys go on meanwhile). So a factory may call back into the database, except
/// for the very kernel it is building (that throws invalid_argument instead of deadlocking).
/// What the database drops (kernels, devices, factories) is freed after the mutex is released:
/// a kernel's last reference may close a lost device, which waits for it within its timeout.
/// Bounded: it keeps at most limits().count live kernels whose buffers hold at most
/// limits().bytes (RuntimeOptions::persistent_capacity / persistent_max_bytes, else
/// VGPU_PERSISTENT_CAPACITY / VGPU_PERSISTENT_MAX_BYTES: 64 kernels, 1 GiB by default; the
/// device's runtime's, or with selection the given runtime's). Past either, the least recently
/// used kernels are evicted (evictions(), the device's counters().persistent_evictions): the
/// database drops its reference, so a kernel another thread still uses stays alive until that
/// thread lets it go, and its buffers are freed then. Its compiled programs stay in the
/// device's L1 cache, so getting an evicted shape again allocates and binds, not compiles.
class VGPU_API KernelDatabase {
 public:
  /// Creates a database of kernels on device, with the built-in ops registered.
  explicit KernelDatabase(Device device);
  /// Creates a database that runs each (id, shape) on the device runtime selects for it
  /// (measured on first use, persisted; vgpu/selection.hpp), with the built-in ops registered.
  explicit KernelDatabase(Runtime& runtime);
  /// Selects devices through Runtime::global().
  KernelDatabase();

  /// Registers (or replaces, evicting its kernels) a kernel family under id; stability says
  /// whether get() must ask the factory on every call (see PlanStability). With selection, the
  /// factory may also run on the runtime's background thread (a calibration, VGPU_BACKGROUND)
  /// after the call that started it returned: what it captures by reference must outlive
  /// Runtime::settle() or the runtime.
  void add(const std::string& id, PlanFactory factory, PlanStability stability = PlanStability::varies);
  /// Returns the persistent kernel for id at shape, building it on a miss (a kernel whose
  /// device was lost since is returned as it is: its next call recovers the device); throws invalid_argument for an
  /// unknown id or a shape the factory rejects.
  std::shared_ptr<PersistentKernel> get(const std::string& id, const Shape& shape);

  /// Runs id at shape on args (get() then the call); with selection, a device failure
  /// (compile, out of memory, unavailable, or device lost where the kernel's own retry on the
  /// recovered device failed too) demotes that device for id's size class and the call runs
  /// again on the next one, down to the CPU; invalid_argument and timeout never do (a timeout
  /// reaches the caller; if it lost the device, the next call recovers it). A device lost and
  /// recovered is not demoted, unless it is lost again within 30 s of recovering (a relapse):
  /// that call's results are still right, and the next calls run on the next device.
  void call(const std::string& id, const Shape& shape, std::span<const TensorArg> args);
  /// Returns how many get() calls found a kernel already built.
  std::uint64_t hits() const;
  /// Returns how many get() calls had to build (compile, allocate, bind) a kernel.
  std::uint64_t misses() const;
  /// Returns how many get() calls (call() included) ran on an interim device: the CPU serving
  /// while their device was being measured in the background (VGPU_BACKGROUND; Runtime::choose).
  std::uint64_t interim_calls() const;
  /// Returns the number of kernels held now.
  std::size_t size() const;
  /// Returns the bytes of device memory the kernels held now keep in their buffers.
  std::uint64_t buffer_bytes() const;
  /// Returns how many kernels the bounds evicted so far (evict() does not count).
  std::uint64_t evictions() const;
  /// Returns the bounds on the kernels held.
  PersistentLimits limits() const;
  /// Sets the bounds on the kernels held, evicting the least recently used beyond them; throws
  /// invalid_argument for a count outside 1 ... PersistentLimits::kMaxCount or 0 bytes.
  void set_limits(PersistentLimits limits);
  /// Returns "KernelDB: <hits> hits, <misses> compiles", with ", <n> evictions" once the bounds evicted any.
  std::string report() const;
  /// Drops every kernel built for id.
  void evict(const std::string& id);
  /// Drops every kernel.
  void evict();
  /// Returns the device kernels are built on (with selection: the device of the last get()).
  Device device() const;
  /// Returns whether devices are selected per (id, shape) rather than fixed.
  bool selects() const noexcept;

  /// Frees the kernels (their buffers) once no other thread uses them.
  ~KernelDatabase();
  KernelDatabase(const KernelDatabase&) = delete;
  KernelDatabase& operator=(const KernelDatabase&) = delete;

 private:
  // Everything else lives in the implementation (core/runtime/kernel_cache/
  // kernel_database_impl.hpp): the exported layout is this one pointer.
  std::unique_ptr<detail::KernelDatabaseImpl> impl_;  // never null
};

}  // namespace vgpu
