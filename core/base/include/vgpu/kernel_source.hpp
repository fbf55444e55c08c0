// SPDX-License-Identifier: Apache-2.0
// vgpu/kernel_source.hpp — a kernel's sources per dialect, its binding ABI and compile options.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/params.hpp"
#include "vgpu/specialization.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

namespace detail {
struct CpuDispatchControl;
}  // namespace detail

/// Returns v as T: bool, an integer type or a floating type, converting between them as C++ does.
template <class T>
T spec_as(const SpecValue& v) noexcept {
  float f = 0;
  std::memcpy(&f, &v.bits, 4);
  switch (v.type) {
    case SpecValue::Type::boolean:
      return static_cast<T>(v.bits != 0);
    case SpecValue::Type::i32:
      return static_cast<T>(static_cast<std::int32_t>(v.bits));
    case SpecValue::Type::u32:
      return static_cast<T>(v.bits);
    case SpecValue::Type::f32:
      return static_cast<T>(f);
  }
  return T{};
}

/// One bound buffer as a CPU kernel sees it.
struct VGPU_API CpuBufferView {
  void* data = nullptr;
  std::uint64_t bytes = 0;
};

/// What a CPU kernel receives for one workgroup: the same ABI GPU kernels get (buffers by
/// slot, the params block, workgroup/global ids). Valid only during the call.
/// Time limits: the CPU backend checks the call's deadline between workgroups and starts no
/// further workgroup once it has passed (the call then raises ErrorCategory::timeout and the
/// device stays usable). A workgroup already running cannot be preempted: a long loop inside
/// one should poll expired() and return early.
struct VGPU_API CpuWorkgroup {
  std::span<const CpuBufferView> buffers;  ///< indexed by binding slot; unbound slots are null
  const void* params = nullptr;            ///< the dispatch's params block
  std::array<std::uint32_t, 3> workgroup_id{};
  std::array<std::uint32_t, 3> num_workgroups{};
  std::array<std::uint32_t, 3> workgroup_size{};
  detail::CpuDispatchControl* control = nullptr;  ///< the dispatch's deadline (vgpu-internal; null: none)
  /// The compile's CompileOptions::spec_constants, as given (by id or by name): a callable's
  /// specialisation, read with spec().
  std::span<const SpecConstant> spec_constants;

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
  /// Returns the specialization constant with that id as T (bool, an integer or float;
  /// converted from the type it was set with), or fallback when the compile set none.
  template <class T>
  T spec(std::uint32_t id, T fallback) const noexcept {
    for (const SpecConstant& c : spec_constants)
      if (c.id && *c.id == id) return spec_as<T>(c.value);
    return fallback;
  }
  /// Returns the specialization constant set by that name as T, or fallback when none was.
  template <class T>
  T spec(std::string_view name, T fallback) const noexcept {
    for (const SpecConstant& c : spec_constants)
      if (!c.id && c.name == name) return spec_as<T>(c.value);
    return fallback;
  }
  /// Overload for a string literal name (else it would convert to a pointer, not a name).
  template <class T>
  T spec(const char* name, T fallback) const noexcept {
    return spec<T>(std::string_view(name), fallback);
  }
  /// Calls f(global_id, local_id) for every invocation of this workgroup, x fastest.
  template <class F>
  void for_each_invocation(F&& f) const {
    using U3 = std::array<std::uint32_t, 3>;
    for (std::uint32_t z = 0; z < workgroup_size[2]; ++z)
      for (std::uint32_t y = 0; y < workgroup_size[1]; ++y)
        for (std::uint32_t x = 0; x < workgroup_size[0]; ++x) {
          const U3 local{x, y, z};
          const U3 global{workgroup_id[0] * workgroup_size[0] + x, workgroup_id[1] * workgroup_size[1] + y,
                          workgroup_id[2] * workgroup_size[2] + z};
          f(global, local);
        }
  }
};

/// A CPU kernel body, called once per workgroup (workgroups run in parallel).
using CpuKernelFn = std::function<void(const CpuWorkgroup&)>;

/// Names of the dialects vgpu's own backends accept. The set is open: a backend declares the
/// dialects it compiles (DeviceInfo::dialects, preferred first), so a new one needs no change here.
namespace dialect {
inline constexpr std::string_view glsl = "glsl";  ///< GLSL 450 compute body under vgpu's prelude (Vulkan, OpenGL)
/// A complete GLSL compute shader exactly as written: its own #version, #extension, #pragma,
/// local size, set/binding qualifiers, push-constant block, UBOs and SSBOs (Vulkan, OpenGL).
inline constexpr std::string_view glsl_shader = "glsl_shader";
/// A SPIR-V module: code holds its bytes (little-endian words), entry its entry point.
inline constexpr std::string_view spirv = "spirv";
inline constexpr std::string_view cuda = "cuda";  ///< CUDA C for NVRTC; entry = the extern "C" kernel
inline constexpr std::string_view cpu = "cpu";    ///< a C++ callable (fn), or a CPU built-in named by entry
}  // namespace dialect

/// Specialization-constant ids vgpu keeps for itself (the body form's local size takes the
/// first three); a kernel whose own constants use one of them is refused with a Fix hint.
inline constexpr std::uint32_t kReservedSpecIdFirst = 2040;
inline constexpr std::uint32_t kReservedSpecIdLast = 2047;

/// One form of a kernel: its dialect, its code and entry point. A plain value.
struct VGPU_API DialectSource {
  std::string dialect;  ///< which dialect the code is in (vgpu::dialect::glsl, …)
  std::string code;     ///< source text (or bytes, for a binary dialect)
  std::string entry;    ///< entry point; for dialect::cpu without fn, the built-in kernel's name
  CpuKernelFn fn;       ///< host callable, for dialects run in-process (dialect::cpu)
  std::string version;  ///< bump when fn's behaviour changes; part of the cache key
  /// Returns true when this entry holds something to compile (code, fn or a built-in name).
  bool present() const noexcept { return !code.empty() || static_cast<bool>(fn) || !entry.empty(); }
};

/// Bytes a binding needs for one dispatch, computed from its params and group count only:
/// kernels whose sources differ just in these functions share one cached compile, so a value
/// captured from elsewhere would check another dispatch against the wrong size.
using RequiredBytesFn = std::function<std::uint64_t(const ParamsBlock&, const Groups&)>;

/// One binding slot a kernel uses. Devices check every dispatch against these declarations,
/// so an undersized buffer is an error, never an out-of-bounds access on a GPU.
struct VGPU_API BindingDecl {
  std::uint32_t slot = 0;
  Access access = Access::read_write;
  std::string name;
  RequiredBytesFn required_bytes;  ///< optional; empty means "any non-empty buffer"
};

/// A kernel's sources, one entry per dialect, plus its binding ABI. A kernel may lack
/// dialects; it then never runs on devices that accept none of those it has (they report
/// not_supported). Thread-safety: a plain value.
struct VGPU_API KernelSource {
  std::string name;                    ///< identifier for messages and reports (not the cache key alone)
  std::vector<DialectSource> sources;  ///< at most one entry per dialect
  std::vector<BindingDecl> bindings;   ///< every slot the kernel uses
  std::uint32_t params_size = 0;       ///< exact params bytes every dispatch must pass

  /// Returns the entry of dialect d, or nullptr when the kernel has none (or an empty one).
  const DialectSource* find(std::string_view d) const noexcept;
  /// Returns the first of preferred (a device's dialects, best first) the kernel has, or nullptr.
  const DialectSource* pick(std::span<const std::string> preferred) const noexcept;
  /// Adds entry, replacing an earlier entry of the same dialect; returns *this.
  KernelSource& add(DialectSource entry);
  /// Removes the entry of dialect d (if any); returns *this.
  KernelSource& remove(std::string_view d);
  /// Adds a GLSL compute body for vgpu's prelude (dialect::glsl); returns *this.
  KernelSource& add_glsl(std::string code);
  /// Adds a complete GLSL compute shader, taken exactly as written (dialect::glsl_shader);
  /// returns *this.
  KernelSource& add_glsl_shader(std::string text, std::string entry = "main");
  /// Adds a SPIR-V module (dialect::spirv); returns *this.
  KernelSource& add_spirv(std::span<const std::uint32_t> words, std::string entry = "main");
  /// Adds CUDA C text with its extern "C" entry point (dialect::cuda); returns *this.
  KernelSource& add_cuda(std::string code, std::string entry);
  /// Adds a CPU callable (dialect::cpu); bump version when its behaviour changes. Returns *this.
  KernelSource& add_cpu(CpuKernelFn fn, std::string version = "1");
  /// Adds the CPU backend's built-in kernel of that name (dialect::cpu); returns *this.
  KernelSource& add_cpu_builtin(std::string builtin, std::string version = "1");
};

/// Specialisation: part of the cache key, unlike data and params.
struct VGPU_API CompileOptions {
  /// The local size a body gets when workgroup_size is left unset.
  static constexpr std::array<std::uint32_t, 3> kDefaultWorkgroupSize{64, 1, 1};

  std::map<std::string, std::string> defines;  ///< -D NAME=VALUE
  /// Local size of one workgroup. Left unset ({0, 0, 0}): a shader's own (a complete GLSL
  /// shader or SPIR-V that declares one), else kDefaultWorkgroupSize. Set while the shader
  /// declares a fixed size: the two must match (else invalid_argument).
  std::array<std::uint32_t, 3> workgroup_size{0, 0, 0};
  /// Specialization constants (Vulkan: VkSpecializationInfo; OpenGL: glSpecializeShader or
  /// the cross-compiled text; CUDA: -D<name>=<value>; CPU: not used). A new value costs a
  /// pipeline, never a GLSL front-end compile.
  std::vector<SpecConstant> spec_constants;

  /// Returns true when workgroup_size was set.
  bool has_workgroup_size() const noexcept { return workgroup_size != std::array<std::uint32_t, 3>{0, 0, 0}; }
  /// Returns workgroup_size, or kDefaultWorkgroupSize when it is unset.
  std::array<std::uint32_t, 3> workgroup_size_or_default() const noexcept {
    return has_workgroup_size() ? workgroup_size : kDefaultWorkgroupSize;
  }
  /// Sets constant id to value (replacing an earlier setting of id); returns *this.
  template <class T>
  CompileOptions& specialize(std::uint32_t id, T value) {
    return set_spec(SpecConstant{id, {}, SpecValue::of(value)});
  }
  /// Sets the constant named name to value (replacing an earlier setting of name); returns *this.
  template <class T>
  CompileOptions& specialize(std::string_view name, T value) {
    return set_spec(SpecConstant{std::nullopt, std::string(name), SpecValue::of(value)});
  }
  /// Adds c, replacing an earlier constant with the same id (or, by name, the same name).
  CompileOptions& set_spec(SpecConstant c);
};

}  // namespace vgpu
