// vgpu/kernel_database.hpp — persistent kernels looked up by kernel id and shape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"
#include "vgpu/persistent_kernel.hpp"

namespace vgpu {

class Runtime;

/// Returns cached PersistentKernels by (kernel id, shape); builds one only when the kernel
/// source, the shape or the binding topology changes (each get() asks the factory for the
/// plan and compares its content hash). The built-in ops are registered.
/// On a fixed device, or with measured selection (Runtime::select per id and size class; a
/// device that fails in call() is demoted and the call runs on the next one).
/// A CPU callable in a plan is identified by its type and CpuKernel::version (captured state
/// cannot be compared): bump version when a factory's callable starts behaving differently.
/// Thread-safety: every member function is safe to call from several threads at once.
class KernelDatabase {
 public:
  /// Creates a database of kernels on device, with the built-in ops registered.
  explicit KernelDatabase(Device device);
  /// Creates a database that runs each (id, shape) on the device runtime selects for it
  /// (measured on first use, persisted; vgpu/selection.hpp), with the built-in ops registered.
  explicit KernelDatabase(Runtime& runtime);
  /// Selects devices through Runtime::global().
  KernelDatabase();

  /// Registers (or replaces, evicting its kernels) a kernel family under id.
  void add(const std::string& id, PlanFactory factory);
  /// Returns the persistent kernel for id at shape, building it on a miss (and again when the
  /// device it was built on is lost since); throws invalid_argument for an unknown id or a
  /// shape the factory rejects.
  std::shared_ptr<PersistentKernel> get(const std::string& id, const Shape& shape);

  /// Runs id at shape on args (get() then the call); with selection, a device failure
  /// (compile, out of memory, device lost, unavailable) demotes that device for id's size class
  /// and the call runs again on the next one, down to the CPU; invalid_argument and timeout
  /// never do (a timeout reaches the caller; if it lost the device, the next call builds the
  /// kernel again on a freshly opened one).
  void call(const std::string& id, const Shape& shape, std::span<const TensorArg> args);
  /// Returns how many get() calls found a kernel already built.
  std::uint64_t hits() const;
  /// Returns how many get() calls had to build (compile, allocate, bind) a kernel.
  std::uint64_t misses() const;
  /// Returns the number of kernels held now.
  std::size_t size() const;
  /// Returns "KernelDB: <hits> hits, <misses> compiles".
  std::string report() const;
  /// Drops every kernel built for id.
  void evict(const std::string& id);
  /// Drops every kernel.
  void evict();
  /// Returns the device kernels are built on (with selection: the device of the last get()).
  Device device() const;
  /// Returns whether devices are selected per (id, shape) rather than fixed.
  bool selects() const noexcept { return runtime_ != nullptr; }

 private:
  void register_builtins();

  Runtime* runtime_ = nullptr;  // selection on; null: device_ is fixed
  Device device_;
  mutable std::mutex mutex_;
  std::map<std::string, PlanFactory> factories_;
  struct Entry {
    std::string id;
    std::shared_ptr<PersistentKernel> kernel;
  };
  std::unordered_map<std::uint64_t, Entry> kernels_;  // key: hash of id, shape and plan content
  std::uint64_t hits_ = 0, misses_ = 0;
  // With selection: the device chosen per (id, shape), valid while the runtime's epoch holds.
  struct Chosen {
    Device device;
    std::uint64_t epoch = 0;
  };
  std::map<std::pair<std::string, Shape>, Chosen> chosen_;
};

}  // namespace vgpu
