// SPDX-License-Identifier: Apache-2.0
// vgpu/types.hpp — small value types shared by the whole public API.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu {

/// Which compute API a device belongs to: an opaque id, one per backend name. vgpu's own four
/// are the constants below; any other backend (one more registry entry, or one passed in
/// RuntimeOptions::backends) gets its kind from its name, BackendKind::named("name"), never from
/// a number, so two backends cannot share a kind by accident. Order is not priority; the
/// registry (core/runtime/device/registry.cpp) decides that. A default-constructed kind is cuda.
/// Thread-safety: a value type; named() may be called from any thread.
class BackendKind {
 public:
  static const BackendKind cuda, vulkan, opengl, cpu;

  /// Returns cuda, the first of vgpu's own kinds (a placeholder until assigned).
  constexpr BackendKind() noexcept = default;
  /// Returns the kind of the backend called name: vgpu's own for "cuda", "vulkan", "opengl" and
  /// "cpu"; for another name, the kind the first call with that name made (one name, one kind,
  /// for the life of the process). Throws invalid_argument for a name that is empty or holds
  /// ':', ',' or a space (names form device ids such as name:0).
  VGPU_API static BackendKind named(std::string_view name);
  /// Returns the kind's number: 0-3 for vgpu's own (in the order above), then 4, 5, … in the
  /// order other names were first seen by named(). For hashing and messages, not to be stored.
  constexpr std::uint16_t id() const noexcept { return id_; }
  /// Returns whether this is one of vgpu's own four backends.
  constexpr bool builtin() const noexcept { return id_ < 4; }
  /// Kinds compare by id.
  friend constexpr bool operator==(BackendKind, BackendKind) noexcept = default;
  /// Orders kinds by id (for ordered containers; not a priority).
  friend constexpr std::strong_ordering operator<=>(BackendKind, BackendKind) noexcept = default;

 private:
  // find_backend_kind looks a name up once and makes its kind without adding the name.
  friend std::optional<BackendKind> find_backend_kind(std::string_view name) noexcept;
  constexpr explicit BackendKind(std::uint16_t id) noexcept : id_(id) {}
  std::uint16_t id_ = 0;
};
inline constexpr BackendKind BackendKind::cuda{0};
inline constexpr BackendKind BackendKind::vulkan{1};
inline constexpr BackendKind BackendKind::opengl{2};
inline constexpr BackendKind BackendKind::cpu{3};

/// What sort of hardware a device is; selection ranks by this, never by display name.
enum class DeviceType { discrete_gpu, integrated_gpu, virtual_gpu, software, cpu, other };

/// Element types of arrays and kernel tensors. The built-in ops compute on f32, f16 and bf16
/// (16-bit storage, float32 arithmetic, one rounding: docs/numerics.md); f64, i32, u32, i8 and
/// u8 are storage types of Arrays and user kernels' tensors (docs/arrays.md). New values are
/// only ever appended: the numbers are stable.
enum class DType : std::uint8_t { f32, i32, u32, f64, i8, u8, f16, bf16 };

/// How a kernel uses a binding slot.
enum class Access { read, write, read_write };

/// Returns "cuda", "vulkan", "opengl", "cpu", or the name another backend's kind was made from.
VGPU_API std::string_view to_string(BackendKind kind) noexcept;
/// Returns "discrete_gpu", "integrated_gpu", "virtual_gpu", "software", "cpu" or "other".
VGPU_API std::string_view to_string(DeviceType type) noexcept;
/// Returns "f32", "i32", "u32", "f64", "i8", "u8", "f16" or "bf16".
VGPU_API std::string_view to_string(DType dtype) noexcept;
/// Returns numpy's name of dtype: "float32", "int32", "uint32", "float64", "int8", "uint8",
/// "float16" or "bfloat16".
VGPU_API std::string_view numpy_name(DType dtype) noexcept;
/// Parses a dtype name, vgpu's short one ("f32") or numpy's ("float32"); nothing for another.
VGPU_API std::optional<DType> parse_dtype(std::string_view name) noexcept;
/// Returns "read", "write" or "read_write".
VGPU_API std::string_view to_string(Access access) noexcept;
/// Parses a backend name as printed by to_string (vgpu's own or a registered one); throws
/// invalid_argument on anything else.
VGPU_API BackendKind parse_backend_kind(std::string_view name);
/// Returns the kind named name (as parse_backend_kind), or nothing when no backend has that name.
VGPU_API std::optional<BackendKind> find_backend_kind(std::string_view name) noexcept;
/// Returns the size in bytes of one element of dtype (8, 4, 2 or 1).
VGPU_API std::size_t dtype_size(DType dtype) noexcept;

/// Returns true for f32, f64, f16 and bf16.
VGPU_API bool is_float(DType dtype) noexcept;
/// Returns element index of data (an array of dtype) as a double: exact for every dtype but
/// the integers past 2^53 none of vgpu's dtypes hold. For checks and conversions, not hot loops.
VGPU_API double element_value(DType dtype, const void* data, std::uint64_t index) noexcept;
/// Stores value as element index of data (an array of dtype), rounded to nearest (floats; f16
/// and bf16 to nearest even) or truncated toward zero and wrapped (integers, as a C cast of the
/// value in range).
VGPU_API void set_element_value(DType dtype, void* data, std::uint64_t index, double value) noexcept;

/// Number of workgroups along x, y, z of one dispatch.
struct VGPU_API Groups {
  std::uint32_t x = 1, y = 1, z = 1;
  /// Returns x*y*z as a 64-bit count.
  std::uint64_t total() const noexcept { return std::uint64_t{x} * y * z; }
  friend bool operator==(const Groups&, const Groups&) = default;
};

/// Dimensions of a tensor, outermost first (row-major).
using Shape = std::vector<std::uint64_t>;

/// Returns the product of a shape's dimensions (1 for an empty shape, 0 when one is 0); throws
/// invalid_argument naming the shape when the product does not fit in 64 bits.
VGPU_API std::uint64_t element_count(const Shape& shape);
/// Returns the bytes a tensor of shape and dtype takes (element_count × dtype_size); throws
/// invalid_argument naming the shape when that does not fit in 64 bits.
VGPU_API std::uint64_t tensor_bytes(const Shape& shape, DType dtype);
/// Returns a × b; throws invalid_argument naming what (e.g. "kernel 'k' slot 0's size") when
/// the product does not fit in 64 bits. The one checked multiply vgpu's sizes go through.
VGPU_API std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what);
/// Returns a + b; throws invalid_argument naming what when the sum does not fit in 64 bits.
VGPU_API std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what);
/// Formats a shape as "[2x3x4]".
VGPU_API std::string to_string(const Shape& shape);

}  // namespace vgpu
