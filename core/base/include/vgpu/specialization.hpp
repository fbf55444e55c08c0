// SPDX-License-Identifier: Apache-2.0
// vgpu/specialization.hpp — typed specialization-constant values, and what a compiled kernel's
// SPIR-V (or other reflected form) says about its interface.
#pragma once

#include "vgpu/export.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "vgpu/types.hpp"

namespace vgpu {

/// One specialization-constant value: bool, 32-bit int, 32-bit unsigned or 32-bit float, held
/// as the 32-bit pattern SPIR-V takes. A plain value.
struct VGPU_API SpecValue {
  enum class Type : std::uint8_t { boolean, i32, u32, f32 };
  Type type = Type::u32;
  std::uint32_t bits = 0;  ///< the value's bit pattern (bool: 0 or 1)

  /// Returns the value v of type bool, std::int32_t, std::uint32_t or float (other integer
  /// types convert to i32/u32 by signedness; doubles to f32).
  template <class T>
  static SpecValue of(T v) noexcept {
    SpecValue s;
    if constexpr (std::is_same_v<T, bool>) {
      s.type = Type::boolean;
      s.bits = v ? 1u : 0u;
    } else if constexpr (std::is_floating_point_v<T>) {
      const float f = static_cast<float>(v);
      s.type = Type::f32;
      std::memcpy(&s.bits, &f, 4);
    } else if constexpr (std::is_signed_v<T>) {
      s.type = Type::i32;
      s.bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
    } else {
      s.type = Type::u32;
      s.bits = static_cast<std::uint32_t>(v);
    }
    return s;
  }
  /// Returns the value as text ("true", "-3", "7u", "1.5f") for messages and the cache key.
  std::string describe() const;
  friend bool operator==(const SpecValue&, const SpecValue&) = default;
};

/// One specialization constant a compile sets: by SPIR-V constant_id (id), or by name (id
/// empty) resolved against the kernel's reflection. CUDA takes it as -D<name>=<value>.
struct VGPU_API SpecConstant {
  std::optional<std::uint32_t> id;
  std::string name;
  SpecValue value;
  friend bool operator==(const SpecConstant&, const SpecConstant&) = default;
};

/// What kind of descriptor a reflected binding is.
enum class ResourceKind : std::uint8_t { storage_buffer, uniform_buffer };

/// One buffer binding a shader declares, as reflected from its SPIR-V.
struct VGPU_API ReflectedBinding {
  std::uint32_t set = 0;
  std::uint32_t binding = 0;  ///< vgpu's slot (slots are unique across sets)
  ResourceKind kind = ResourceKind::storage_buffer;
  Access access = Access::read_write;  ///< readonly → read, writeonly → write
  std::string name;                    ///< block instance name, else block type name
  std::uint64_t fixed_bytes = 0;       ///< the block's size without its runtime array
  std::uint64_t runtime_stride = 0;    ///< element stride of a trailing runtime array; 0: none
};

/// One specialization constant a shader declares.
struct VGPU_API ReflectedSpecConstant {
  std::uint32_t id = 0;
  std::string name;  ///< as in the source (empty when stripped)
  SpecValue default_value;
};

/// A compiled kernel's interface, reflected from its SPIR-V (Vulkan, OpenGL). A plain value.
struct VGPU_API KernelReflection {
  std::string entry = "main";
  std::vector<ReflectedBinding> bindings;                      ///< sorted by binding
  std::uint32_t push_constant_bytes = 0;                       ///< size of the push-constant block (0: none)
  std::array<std::uint32_t, 3> local_size{1, 1, 1};            ///< the local size the kernel runs with (specialised)
  std::array<std::optional<std::uint32_t>, 3> local_size_ids;  ///< constant ids that set it, if any
  std::vector<ReflectedSpecConstant> spec_constants;           ///< sorted by id
  std::vector<std::string> capabilities;                       ///< SPIR-V capabilities declared ("Float16", …)
};

}  // namespace vgpu
