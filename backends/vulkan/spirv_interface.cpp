// SPDX-License-Identifier: Apache-2.0
// backends/vulkan/spirv_interface.cpp — a module's descriptors, push constants and workgroup
// size, read from its instructions (vgpu/spirv_instructions.hpp splits the words; this file
// only interprets the few that make up the pipeline interface).
#include "spirv_interface.hpp"

#include <spirv/unified1/spirv.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "vgpu/spirv_instructions.hpp"

namespace vgpu::vulkan {
namespace {

using Words = std::vector<std::uint32_t>;

/// The instructions of a module that make up its interface, as their words.
struct Module {
  std::map<std::uint32_t, Words> defs;  // result id → its defining type/constant/variable
  std::vector<Words> decorations, member_decorations, entry_points, execution_modes;
};

/// Word i of an instruction, or 0 past its end (a validated module never goes there).
std::uint32_t at(const Words& w, std::size_t i) { return i < w.size() ? w[i] : 0; }
SpvOp opcode(const Words& w) { return static_cast<SpvOp>(at(w, 0) & 0xffff); }

/// Files one instruction (its words) under what it is in m.
void collect(Module& m, Words words) {
  switch (opcode(words)) {
    case SpvOpDecorate:
      m.decorations.push_back(std::move(words));
      break;
    case SpvOpMemberDecorate:
      m.member_decorations.push_back(std::move(words));
      break;
    case SpvOpEntryPoint:
      m.entry_points.push_back(std::move(words));
      break;
    case SpvOpExecutionMode:
    case SpvOpExecutionModeId:
      m.execution_modes.push_back(std::move(words));
      break;
    case SpvOpTypeBool:
    case SpvOpTypeInt:
    case SpvOpTypeFloat:
    case SpvOpTypeVector:
    case SpvOpTypeMatrix:
    case SpvOpTypeArray:
    case SpvOpTypeRuntimeArray:
    case SpvOpTypeStruct:
    case SpvOpTypePointer:
      // A type's result id is its first operand.
      if (words.size() >= 2) m.defs[words[1]] = std::move(words);
      break;
    case SpvOpConstant:
    case SpvOpConstantComposite:
    case SpvOpSpecConstant:
    case SpvOpSpecConstantTrue:
    case SpvOpSpecConstantFalse:
    case SpvOpSpecConstantComposite:
    case SpvOpSpecConstantOp:
    case SpvOpVariable:
      // A constant's or variable's result id follows its result type.
      if (words.size() >= 3) m.defs[words[2]] = std::move(words);
      break;
    default:
      break;
  }
}

/// Reads a module's interface; the analysis below then only looks things up.
class Interface {
 public:
  explicit Interface(Module m) : m_(std::move(m)) {
    // Indexed once: a lookup per variable or member would be quadratic in a large module.
    for (const Words& w : m_.decorations) decorations_.try_emplace({at(w, 1), at(w, 2)}, at(w, 3));
    for (const Words& w : m_.member_decorations)
      member_decorations_.try_emplace({at(w, 1), at(w, 2), at(w, 3)}, at(w, 4));
  }

  const Words* def(std::uint32_t id) const {
    const auto it = m_.defs.find(id);
    return it == m_.defs.end() ? nullptr : &it->second;
  }
  /// The first literal of decoration d on id, if decorated.
  std::optional<std::uint32_t> decoration(std::uint32_t id, SpvDecoration d) const {
    const auto it = decorations_.find({id, static_cast<std::uint32_t>(d)});
    return it == decorations_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
  }
  std::optional<std::uint32_t> member_decoration(std::uint32_t id, std::uint32_t member, SpvDecoration d) const {
    const auto it = member_decorations_.find({id, member, static_cast<std::uint32_t>(d)});
    return it == member_decorations_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
  }
  bool has_decoration(std::uint32_t id, SpvDecoration d) const { return decoration(id, d).has_value(); }
  bool has_member_decoration(std::uint32_t id, std::uint32_t member, SpvDecoration d) const {
    return member_decoration(id, member, d).has_value();
  }
  const Module& module() const { return m_; }

  /// Bytes a value of type occupies in an explicitly laid out block (Offset, ArrayStride,
  /// MatrixStride decorations); nothing for a type that has no such size (runtime arrays,
  /// spec-constant lengths, booleans).
  std::optional<std::uint64_t> size_of(std::uint32_t type, std::uint32_t matrix_stride, bool row_major,
                                       int depth) const {
    if (depth == 0) size_steps_ = 0;
    // Bounded work: a module that is not validated (the fuzz target feeds those too) may nest
    // a struct in itself many times over.
    const Words* t = def(type);
    if (!t || depth > 16 || ++size_steps_ > 100000) return std::nullopt;
    switch (opcode(*t)) {
      case SpvOpTypeInt:
      case SpvOpTypeFloat:
        return at(*t, 2) / 8;
      case SpvOpTypeVector: {
        const auto c = size_of(at(*t, 2), 0, false, depth + 1);
        if (!c) return std::nullopt;
        return *c * at(*t, 3);
      }
      case SpvOpTypeMatrix: {
        const Words* column = def(at(*t, 2));
        if (!column || matrix_stride == 0) return std::nullopt;
        return std::uint64_t{matrix_stride} * (row_major ? at(*column, 3) : at(*t, 3));
      }
      case SpvOpTypeArray: {
        const Words* length = def(at(*t, 3));
        const auto stride = decoration(type, SpvDecorationArrayStride);
        if (!length || opcode(*length) != SpvOpConstant || !stride) return std::nullopt;
        return std::uint64_t{*stride} * at(*length, 3);
      }
      case SpvOpTypeStruct: {
        std::uint64_t end = 0;
        for (std::uint32_t i = 0; i + 2 < t->size(); ++i) {
          const auto offset = member_decoration(type, i, SpvDecorationOffset);
          const auto size = size_of(at(*t, i + 2), member_decoration(type, i, SpvDecorationMatrixStride).value_or(0),
                                    has_member_decoration(type, i, SpvDecorationRowMajor), depth + 1);
          if (!offset || !size) return std::nullopt;
          end = std::max(end, *offset + *size);
        }
        return end;
      }
      default:
        return std::nullopt;
    }
  }

  /// The value constant id has once vgpu's specialisation (workgroup size as constants
  /// 2040–2042) is applied; nothing for anything but a 32-bit integer constant.
  std::optional<std::uint32_t> specialised(std::uint32_t id, const std::array<std::uint32_t, 3>& wg) const {
    const Words* c = def(id);
    if (!c || (opcode(*c) != SpvOpConstant && opcode(*c) != SpvOpSpecConstant) || c->size() != 4) return std::nullopt;
    if (opcode(*c) == SpvOpSpecConstant)
      if (const auto spec = decoration(id, SpvDecorationSpecId);
          spec && *spec >= kBodyLocalSizeId && *spec < kBodyLocalSizeId + 3)
        return wg[*spec - kBodyLocalSizeId];
    return at(*c, 3);
  }

 private:
  Module m_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> decorations_;  // (id, decoration) → literal
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> member_decorations_;
  mutable std::uint64_t size_steps_ = 0;
};

std::string problem(std::string text) { return "the SPIR-V does not fit its pipeline: " + text; }

std::string check_descriptors(const Interface& in, const PipelineInterface& p) {
  std::uint32_t push_blocks = 0;
  for (const auto& [id, w] : in.module().defs) {
    if (opcode(w) != SpvOpVariable) continue;
    // A raw word: an invalid module may hold a value outside SpvStorageClass (UB to cast).
    const std::uint32_t storage = at(w, 3);
    const Words* pointer = in.def(at(w, 1));
    const std::uint32_t pointee = pointer ? at(*pointer, 3) : 0;
    const Words* type = in.def(pointee);
    const std::string name = "variable %" + std::to_string(id);
    if (storage == SpvStorageClassPushConstant) {
      ++push_blocks;
      const auto bytes = type ? in.size_of(pointee, 0, false, 0) : std::nullopt;
      if (!bytes) return problem("the push-constant block of " + name + " has no explicit layout");
      if (*bytes > p.push_bytes)
        return problem("the push constants end at byte " + std::to_string(*bytes) + ", past the " +
                       std::to_string(p.push_bytes) + "-byte params block");
      continue;
    }
    if (storage != SpvStorageClassUniformConstant && storage != SpvStorageClassUniform &&
        storage != SpvStorageClassStorageBuffer)
      continue;
    // vgpu's pipeline layouts hold one storage buffer per declared slot and nothing else.
    if (!type || opcode(*type) != SpvOpTypeStruct)
      return problem(name + " is a descriptor that is not a single buffer block (an image, sampler or array)");
    const bool storage_buffer = storage == SpvStorageClassStorageBuffer ? in.has_decoration(pointee, SpvDecorationBlock)
                                : storage == SpvStorageClassUniform
                                    ? in.has_decoration(pointee, SpvDecorationBufferBlock)
                                    : false;
    if (!storage_buffer) return problem(name + " is a uniform buffer or image; vgpu binds storage buffers only");
    const auto set = in.decoration(id, SpvDecorationDescriptorSet);
    const auto binding = in.decoration(id, SpvDecorationBinding);
    if (!set || *set != 0) return problem(name + " is not in descriptor set 0");
    if (!binding || std::find(p.slots.begin(), p.slots.end(), *binding) == p.slots.end())
      return problem(name + " uses binding " + (binding ? std::to_string(*binding) : std::string("(none)")) +
                     ", which the kernel does not declare");
  }
  if (push_blocks > 1) return problem("it declares " + std::to_string(push_blocks) + " push-constant blocks");
  return {};
}

std::string check_workgroup(const Interface& in, const PipelineInterface& p, std::uint32_t main_id) {
  // Constants 2040–2042 receive 4-byte values (the specialisation map); they must be 32-bit integers.
  for (const Words& w : in.module().decorations) {
    if (at(w, 2) != SpvDecorationSpecId || at(w, 3) < kBodyLocalSizeId || at(w, 3) >= kBodyLocalSizeId + 3) continue;
    const Words* c = in.def(at(w, 1));
    const Words* type = c ? in.def(at(*c, 1)) : nullptr;
    if (!c || opcode(*c) != SpvOpSpecConstant || !type || opcode(*type) != SpvOpTypeInt || at(*type, 2) != 32)
      return problem("specialisation constant " + std::to_string(at(w, 3)) + " is not a 32-bit integer");
  }
  // The size the module runs with: the WorkgroupSize built-in wins over the execution modes.
  std::optional<std::array<std::uint32_t, 3>> size;
  auto from_ids = [&](std::uint32_t x, std::uint32_t y,
                      std::uint32_t z) -> std::optional<std::array<std::uint32_t, 3>> {
    const auto a = in.specialised(x, p.workgroup_size), b = in.specialised(y, p.workgroup_size),
               c = in.specialised(z, p.workgroup_size);
    if (!a || !b || !c) return std::nullopt;
    return std::array<std::uint32_t, 3>{*a, *b, *c};
  };
  bool builtin = false;
  for (const Words& w : in.module().decorations) {
    if (at(w, 2) != SpvDecorationBuiltIn || at(w, 3) != SpvBuiltInWorkgroupSize) continue;
    const Words* c = in.def(at(w, 1));
    builtin = true;
    if (c && (opcode(*c) == SpvOpConstantComposite || opcode(*c) == SpvOpSpecConstantComposite) && c->size() == 6)
      size = from_ids(at(*c, 3), at(*c, 4), at(*c, 5));
  }
  if (!builtin)
    for (const Words& w : in.module().execution_modes) {
      if (at(w, 1) != main_id) continue;
      if (opcode(w) == SpvOpExecutionMode && at(w, 2) == SpvExecutionModeLocalSize)
        size = std::array<std::uint32_t, 3>{at(w, 3), at(w, 4), at(w, 5)};
      else if (opcode(w) == SpvOpExecutionModeId && at(w, 2) == SpvExecutionModeLocalSizeId)
        size = from_ids(at(w, 3), at(w, 4), at(w, 5));
    }
  if (!size) return problem("its workgroup size cannot be read");
  if (*size != p.workgroup_size)
    return problem("it runs with a workgroup size of " + std::to_string((*size)[0]) + "x" + std::to_string((*size)[1]) +
                   "x" + std::to_string((*size)[2]) + ", not the " + std::to_string(p.workgroup_size[0]) + "x" +
                   std::to_string(p.workgroup_size[1]) + "x" + std::to_string(p.workgroup_size[2]) +
                   " it was compiled for");
  return {};
}

}  // namespace

std::string spirv_interface_problem(std::span<const std::uint32_t> words, const PipelineInterface& pipeline) {
  std::vector<spirv::Instruction> insts;
  if (std::string why; !spirv::split_instructions(words, &insts, &why)) return "the SPIR-V could not be parsed";
  Module m;
  for (const spirv::Instruction& i : insts)
    collect(m, Words(words.begin() + static_cast<std::ptrdiff_t>(i.at),
                     words.begin() + static_cast<std::ptrdiff_t>(i.at + i.count)));
  const Interface in(std::move(m));

  std::optional<std::uint32_t> main_id;
  for (const Words& w : in.module().entry_points) {
    // Operands: execution model, function id, the name as a NUL-terminated string in words.
    if (at(w, 1) != SpvExecutionModelGLCompute || w.size() < 4) continue;
    const auto* name = reinterpret_cast<const char*>(w.data() + 3);
    if (strnlen(name, (w.size() - 3) * 4) == 4 && std::string_view(name, 4) == "main") main_id = at(w, 2);
  }
  if (!main_id) return problem("it has no GLCompute entry point \"main\"");
  if (std::string why = check_descriptors(in, pipeline); !why.empty()) return why;
  return check_workgroup(in, pipeline, *main_id);
}

}  // namespace vgpu::vulkan
