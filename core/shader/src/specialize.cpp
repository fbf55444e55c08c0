// SPDX-License-Identifier: Apache-2.0
// core/shader/src/specialize.cpp — what a compile specialises, resolved against reflection:
// the user's constants (by id or name, type-checked), vgpu's local size and the reserved ids.
#include <algorithm>
#include <cstring>
#include <map>

#include "vgpu/error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu::shader {
namespace {

const char* type_name(SpecValue::Type t) {
  switch (t) {
    case SpecValue::Type::boolean:
      return "bool";
    case SpecValue::Type::i32:
      return "int";
    case SpecValue::Type::u32:
      return "uint";
    case SpecValue::Type::f32:
      return "float";
  }
  return "?";
}

bool reserved(std::uint32_t id) { return id >= kReservedSpecIdFirst && id <= kReservedSpecIdLast; }

std::string describe(const ReflectedSpecConstant& k) {
  return std::to_string(k.id) + (k.name.empty() ? "" : " '" + k.name + "'") + " (" + type_name(k.default_value.type) +
         ")";
}

std::string list_of(const KernelReflection& r) {
  std::string s;
  for (const auto& k : r.spec_constants) s += (s.empty() ? "" : ", ") + describe(k);
  return s.empty() ? "none" : s;
}

// The bits value takes as constant k's type, or a failure when it does not fit.
std::uint32_t converted(const ReflectedSpecConstant& k, const SpecValue& v, const std::string& kernel) {
  const SpecValue::Type want = k.default_value.type;
  if (v.type == want) return v.bits;
  const bool int_to_uint =
      want == SpecValue::Type::u32 && v.type == SpecValue::Type::i32 && static_cast<std::int32_t>(v.bits) >= 0;
  const bool uint_to_int = want == SpecValue::Type::i32 && v.type == SpecValue::Type::u32 && v.bits <= 0x7fffffffu;
  if (int_to_uint || uint_to_int) return v.bits;
  fail(ErrorCategory::invalid_argument,
       "kernel '" + kernel + "': specialization constant " + describe(k) + " cannot take the " + type_name(v.type) +
           " value " + v.describe() + ".",
       std::string("pass a ") + type_name(want) + " to CompileOptions::specialize for it.");
}

std::string size_text(const std::array<std::uint32_t, 3>& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

}  // namespace

std::vector<SpecEntry> resolve_specialization(const KernelReflection& reflection, const CompileOptions& options,
                                              bool reserved_ids_allowed, const std::string& kernel_name,
                                              std::array<std::uint32_t, 3>* local_size) {
  if (!reserved_ids_allowed)
    for (const auto& k : reflection.spec_constants)
      if (reserved(k.id))
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_name + "' declares specialization constant " + describe(k) + " in the range " +
                 std::to_string(kReservedSpecIdFirst) + ".." + std::to_string(kReservedSpecIdLast) +
                 " that vgpu keeps for itself.",
             "give the constant a constant_id below " + std::to_string(kReservedSpecIdFirst) + ".");
  std::map<std::uint32_t, std::uint32_t> values;  // id → bits
  for (const SpecConstant& c : options.spec_constants) {
    const ReflectedSpecConstant* k = nullptr;
    if (c.id) {
      if (reserved(*c.id))
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_name + "': CompileOptions sets specialization constant " + std::to_string(*c.id) +
                 ", in the range " + std::to_string(kReservedSpecIdFirst) + ".." + std::to_string(kReservedSpecIdLast) +
                 " that vgpu keeps for itself.",
             "set the workgroup size through CompileOptions::workgroup_size, and give your own constants ids below " +
                 std::to_string(kReservedSpecIdFirst) + ".");
      for (const auto& r : reflection.spec_constants)
        if (r.id == *c.id) k = &r;
      if (!k)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_name + "' has no specialization constant with id " + std::to_string(*c.id) +
                 " (it declares: " + list_of(reflection) + ").",
             "specialise one of the constants the shader declares (layout(constant_id = N)).");
    } else {
      for (const auto& r : reflection.spec_constants)
        if (!c.name.empty() && r.name == c.name) k = &r;
      if (!k)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_name + "' has no specialization constant named '" + c.name +
                 "' (it declares: " + list_of(reflection) + ").",
             "use one of the names listed, or the constant's id (a module compiled without debug names keeps none).");
    }
    values[k->id] = converted(*k, c.value, kernel_name);
  }

  std::array<std::uint32_t, 3> size = reflection.local_size;
  for (int i = 0; i < 3; ++i)
    if (const auto& id = reflection.local_size_ids[i]) {
      if (auto it = values.find(*id); it != values.end()) size[i] = it->second;
    }
  if (options.has_workgroup_size()) {
    const auto want = options.workgroup_size;
    for (int i = 0; i < 3; ++i) {
      const auto& id = reflection.local_size_ids[i];
      if (id && (!values.count(*id) || values[*id] == want[i])) {
        values[*id] = want[i];
        size[i] = want[i];
      }
    }
    if (size != want)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + kernel_name + "' declares a local size of " + size_text(size) +
               ", but CompileOptions::workgroup_size asks for " + size_text(want) + ".",
           "leave CompileOptions::workgroup_size unset to run with the shader's own local size, or set it to " +
               size_text(size) + " (or make the local size a specialization constant with local_size_x_id).");
  }
  for (int i = 0; i < 3; ++i)
    if (size[i] == 0)
      fail(ErrorCategory::invalid_argument,
           "kernel '" + kernel_name + "' would run with a local size of " + size_text(size) + ".",
           "give every dimension of the local size a value of at least 1.");
  if (local_size) *local_size = size;
  std::vector<SpecEntry> out;
  for (const auto& [id, bits] : values) out.push_back({id, bits});
  return out;
}

}  // namespace vgpu::shader
