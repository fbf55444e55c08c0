// SPDX-License-Identifier: Apache-2.0
// core/shader/src/gl_forms.cpp — the OpenGL form of a Vulkan-flavoured SPIR-V module: its
// push-constant block rewritten into vgpu's std430 params SSBO (a word-level rewrite, for
// GL_ARB_gl_spirv; the GLSL text for other drivers comes from the toolchain, gl_cross.cpp).
// A pure function of its inputs: thread-safe.
#include <optional>

#include "vgpu/error.hpp"
#include "vgpu/shader/shader_tools.hpp"
#include "vgpu/spirv_instructions.hpp"

namespace vgpu::shader {
namespace {

// SPIR-V numbers this file needs (spirv.h's names, kept local so no header is needed here).
constexpr std::uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                        kOpMemberDecorate = 72, kOpDecorationGroup = 73, kOpGroupDecorate = 74,
                        kOpGroupMemberDecorate = 75, kOpDecorateId = 332, kOpDecorateString = 5632,
                        kOpMemberDecorateString = 5633;
constexpr std::uint32_t kClassUniform = 2, kClassPushConstant = 9, kClassStorageBuffer = 12;
constexpr std::uint32_t kDecoBlock = 2, kDecoBufferBlock = 3, kDecoNonWritable = 24, kDecoBinding = 33,
                        kDecoDescriptorSet = 34;

bool is_annotation(std::uint32_t op) {
  return (op >= kOpDecorate && op <= kOpGroupMemberDecorate) || op == kOpDecorateId || op == kOpDecorateString ||
         op == kOpMemberDecorateString;
}

[[noreturn]] void malformed(const std::string& what) {
  fail(ErrorCategory::invalid_argument, "the SPIR-V module to rewrite for OpenGL is malformed: " + what + ".",
       "pass words that spirv_words or compile_glsl_shader returned (validated SPIR-V).");
}

std::vector<spirv::Instruction> instructions(std::span<const std::uint32_t> words) {
  std::vector<spirv::Instruction> out;
  if (std::string why; !spirv::split_instructions(words, &out, &why)) malformed(why);
  return out;
}

}  // namespace

std::vector<std::uint32_t> push_constants_to_storage_buffer(std::span<const std::uint32_t> words,
                                                            std::uint32_t params_binding) {
  const std::vector<spirv::Instruction> insts = instructions(words);
  std::vector<std::uint32_t> out(words.begin(), words.end());
  const std::uint32_t version = words[1];

  // Find the push-constant variable, its struct type, and whether the module's own storage
  // buffers use the StorageBuffer class (SPIR-V 1.3+, glslang's Vulkan output) or
  // Uniform + BufferBlock (SPIR-V 1.0 style): the params buffer follows the module's way.
  std::optional<std::uint32_t> pc_var, pc_ptr_type;
  bool has_storage_buffer_class = false;
  std::size_t last_annotation_end = 0;
  for (const spirv::Instruction& in : insts) {
    const std::uint32_t* w = &words[in.at];
    if (in.op == kOpTypePointer && in.count >= 4) {
      if (w[2] == kClassStorageBuffer) has_storage_buffer_class = true;
    } else if (in.op == kOpVariable && in.count >= 4 && w[3] == kClassPushConstant) {
      if (pc_var) malformed("two push-constant variables");
      pc_var = w[2];
      pc_ptr_type = w[1];
    } else if (in.op == kOpDecorate && in.count >= 4 && w[2] == kDecoBinding && w[3] == params_binding) {
      fail(ErrorCategory::invalid_argument,
           "the shader declares a buffer at binding " + std::to_string(params_binding) +
               ", which vgpu's OpenGL backend keeps for the params block (the push constants) on this device.",
           "move that buffer to a lower binding (vgpu-probe lists the device's max_bindings).");
    }
    if (is_annotation(in.op)) last_annotation_end = in.at + in.count;
  }
  const bool use_storage_class = has_storage_buffer_class || version >= 0x00010300;
  const std::uint32_t new_class = use_storage_class ? kClassStorageBuffer : kClassUniform;

  std::optional<std::uint32_t> pc_struct;
  std::uint32_t members = 0;
  if (pc_var) {
    for (const spirv::Instruction& in : insts)
      if (in.op == kOpTypePointer && in.count >= 4 && words[in.at + 1] == *pc_ptr_type) pc_struct = words[in.at + 3];
    if (!pc_struct) malformed("the push-constant variable's pointer type is missing");
    for (const spirv::Instruction& in : insts)
      if (in.op == kOpTypeStruct && words[in.at + 1] == *pc_struct) members = in.count - 2;
  }

  // Rewrite in place: every PushConstant class becomes the storage class; every DescriptorSet
  // becomes 0 (GL has one binding namespace); the block decoration follows the class.
  for (const spirv::Instruction& in : insts) {
    std::uint32_t* w = &out[in.at];
    if (in.op == kOpTypePointer && in.count >= 4 && w[2] == kClassPushConstant)
      w[2] = new_class;
    else if (in.op == kOpVariable && in.count >= 4 && w[3] == kClassPushConstant)
      w[3] = new_class;
    else if (in.op == kOpDecorate && in.count >= 4 && w[2] == kDecoDescriptorSet)
      w[3] = 0;
    else if (pc_struct && !use_storage_class && in.op == kOpDecorate && in.count == 3 && w[1] == *pc_struct &&
             w[2] == kDecoBlock)
      w[2] = kDecoBufferBlock;
  }
  if (!pc_var) return out;

  // The params buffer's decorations: set 0, the reserved binding, read-only members (the
  // shader never wrote its push constants; std430 Offsets stay as the front end laid them out).
  std::vector<std::uint32_t> added = {spirv::first_word(4, kOpDecorate), *pc_var, kDecoDescriptorSet, 0,
                                      spirv::first_word(4, kOpDecorate), *pc_var, kDecoBinding,       params_binding};
  for (std::uint32_t m = 0; m < members; ++m)
    added.insert(added.end(), {spirv::first_word(4, kOpMemberDecorate), *pc_struct, m, kDecoNonWritable});
  if (last_annotation_end == 0) malformed("no decorations (a push-constant block always has Offsets)");
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(last_annotation_end), added.begin(), added.end());
  return out;
}

}  // namespace vgpu::shader
