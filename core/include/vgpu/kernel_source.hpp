// vgpu/kernel_source.hpp — a kernel's sources per dialect, its binding ABI and compile options.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "vgpu/params.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

namespace detail {
struct CpuDispatchControl;
}  // namespace detail

/// One bound buffer as a CPU kernel sees it.
struct CpuBufferView {
  void* data = nullptr;
  std::uint64_t bytes = 0;
};

/// What a CPU kernel receives for one workgroup: the same ABI GPU kernels get (buffers by
/// slot, the params block, workgroup/global ids). Valid only during the call.
/// Time limits: the CPU backend checks the call's deadline between workgroups and starts no
/// further workgroup once it has passed (the call then raises ErrorCategory::timeout and the
/// device stays usable). A workgroup already running cannot be preempted: a long loop inside
/// one should poll expired() and return early.
struct CpuWorkgroup {
  std::span<const CpuBufferView> buffers;  ///< indexed by binding slot; unbound slots are null
  const void* params = nullptr;            ///< the dispatch's params block
  std::array<std::uint32_t, 3> workgroup_id{};
  std::array<std::uint32_t, 3> num_workgroups{};
  std::array<std::uint32_t, 3> workgroup_size{};
  detail::CpuDispatchControl* control = nullptr;  ///< the dispatch's deadline (vgpu-internal; null: none)

  /// Returns true once the call this workgroup belongs to has run past its time limit (a few
  /// ns to ask): return early, the call raises timeout anyway; no further workgroup starts.
  bool expired() const noexcept;

  /// Returns slot's buffer as T* (nullptr when unbound).
  template <class T>
  T* buffer(std::uint32_t slot) const noexcept {
    return slot < buffers.size() ? static_cast<T*>(buffers[slot].data) : nullptr;
  }
  /// Returns the params block as const P&.
  template <class P>
  const P& params_as() const noexcept {
    return *static_cast<const P*>(params);
  }
  /// Calls f(global_id, local_id) for every invocation of this workgroup, x fastest.
  template <class F>
  void for_each_invocation(F&& f) const {
    using U3 = std::array<std::uint32_t, 3>;
    for (std::uint32_t z = 0; z < workgroup_size[2]; ++z)
      for (std::uint32_t y = 0; y < workgroup_size[1]; ++y)
        for (std::uint32_t x = 0; x < workgroup_size[0]; ++x) {
          const U3 local{x, y, z};
          const U3 global{workgroup_id[0] * workgroup_size[0] + x,
                          workgroup_id[1] * workgroup_size[1] + y,
                          workgroup_id[2] * workgroup_size[2] + z};
          f(global, local);
        }
  }
};

/// A CPU kernel body, called once per workgroup (workgroups run in parallel).
using CpuKernelFn = std::function<void(const CpuWorkgroup&)>;

/// The CPU dialect: either a user callable or the name of a built-in CPU kernel.
struct CpuKernel {
  CpuKernelFn fn;       ///< user kernel body; empty when builtin is set
  std::string builtin;  ///< name of a kernel the CPU backend implements itself
  std::string version;  ///< bump when fn's behaviour changes; part of the cache key
  /// Returns true when this dialect is present.
  explicit operator bool() const noexcept { return static_cast<bool>(fn) || !builtin.empty(); }
};

/// Bytes a binding needs for one dispatch, computed from its params and group count only:
/// kernels whose sources differ just in these functions share one cached compile, so a value
/// captured from elsewhere would check another dispatch against the wrong size.
using RequiredBytesFn = std::function<std::uint64_t(const ParamsBlock&, const Groups&)>;

/// One binding slot a kernel uses. Devices check every dispatch against these declarations,
/// so an undersized buffer is an error, never an out-of-bounds access on a GPU.
struct BindingDecl {
  std::uint32_t slot = 0;
  Access access = Access::read_write;
  std::string name;
  RequiredBytesFn required_bytes;  ///< optional; empty means "any non-empty buffer"
};

/// A kernel's sources per dialect plus its binding ABI. A kernel may lack dialects; it then
/// never runs on backends that need them (they report not_supported).
/// Thread-safety: a plain value.
struct KernelSource {
  std::string name;        ///< identifier for messages and reports (not the cache key alone)
  std::string glsl;        ///< GLSL 450 compute body shared by OpenGL and Vulkan
  std::string cuda;        ///< CUDA C for NVRTC
  std::string cuda_entry;  ///< extern "C" entry point of the CUDA source
  CpuKernel cpu;           ///< C++ callable or built-in CPU kernel
  std::vector<BindingDecl> bindings;  ///< every slot the kernel uses
  std::uint32_t params_size = 0;      ///< exact params bytes every dispatch must pass
};

/// Specialisation: part of the cache key, unlike data and params.
struct CompileOptions {
  std::map<std::string, std::string> defines;                 ///< -D NAME=VALUE
  std::array<std::uint32_t, 3> workgroup_size{64, 1, 1};      ///< local size of one workgroup
};

}  // namespace vgpu
