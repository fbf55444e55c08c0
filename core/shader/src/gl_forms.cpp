// SPDX-License-Identifier: Apache-2.0
// core/shader/src/gl_forms.cpp — the OpenGL forms of a Vulkan-flavoured SPIR-V module:
// its push-constant block rewritten into vgpu's std430 params SSBO (a word-level rewrite,
// for GL_ARB_gl_spirv), and GLSL text cross-compiled from it by SPIRV-Cross (for drivers
// without GL_ARB_gl_spirv). Both are pure functions of their inputs: thread-safe.
#include <spirv_cross_c.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "vgpu/error.hpp"
#include "vgpu/shader/shader_tools.hpp"

namespace vgpu::shader {
namespace {

// SPIR-V numbers this file needs (spirv.h's names, kept local so no header is needed here).
constexpr std::uint32_t kMagic = 0x07230203;
constexpr std::uint32_t kHeaderWords = 5;
constexpr std::uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                        kOpMemberDecorate = 72, kOpDecorationGroup = 73, kOpGroupDecorate = 74,
                        kOpGroupMemberDecorate = 75, kOpDecorateId = 332, kOpDecorateString = 5632,
                        kOpMemberDecorateString = 5633;
constexpr std::uint32_t kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50;
constexpr std::uint32_t kClassUniform = 2, kClassPushConstant = 9, kClassStorageBuffer = 12;
constexpr std::uint32_t kDecoSpecId = 1, kDecoBlock = 2, kDecoBufferBlock = 3, kDecoNonWritable = 24, kDecoBinding = 33,
                        kDecoDescriptorSet = 34;

bool is_annotation(std::uint32_t op) {
  return (op >= kOpDecorate && op <= kOpGroupMemberDecorate) || op == kOpDecorateId || op == kOpDecorateString ||
         op == kOpMemberDecorateString;
}

[[noreturn]] void malformed(const std::string& what) {
  fail(ErrorCategory::invalid_argument, "the SPIR-V module to rewrite for OpenGL is malformed: " + what + ".",
       "pass words that spirv_words or compile_glsl_shader returned (validated SPIR-V).");
}

/// One instruction: where it starts and how many words it has.
struct Inst {
  std::size_t at = 0;
  std::uint32_t count = 0;
  std::uint32_t op = 0;
};

std::vector<Inst> instructions(std::span<const std::uint32_t> words) {
  if (words.size() < kHeaderWords || words[0] != kMagic) malformed("no SPIR-V header");
  std::vector<Inst> out;
  for (std::size_t i = kHeaderWords; i < words.size();) {
    const std::uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size())
      malformed("an instruction runs past the end at word " + std::to_string(i));
    out.push_back(Inst{i, count, op});
    i += count;
  }
  return out;
}

std::uint32_t word(std::uint32_t count, std::uint32_t op) { return (count << 16) | op; }

}  // namespace

std::vector<std::uint32_t> push_constants_to_storage_buffer(std::span<const std::uint32_t> words,
                                                            std::uint32_t params_binding) {
  const std::vector<Inst> insts = instructions(words);
  std::vector<std::uint32_t> out(words.begin(), words.end());
  const std::uint32_t version = words[1];

  // Find the push-constant variable, its struct type, and whether the module's own storage
  // buffers use the StorageBuffer class (SPIR-V 1.3+, glslang's Vulkan output) or
  // Uniform + BufferBlock (SPIR-V 1.0 style): the params buffer follows the module's way.
  std::optional<std::uint32_t> pc_var, pc_ptr_type;
  bool has_storage_buffer_class = false;
  std::size_t last_annotation_end = 0;
  for (const Inst& in : insts) {
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
    for (const Inst& in : insts)
      if (in.op == kOpTypePointer && in.count >= 4 && words[in.at + 1] == *pc_ptr_type) pc_struct = words[in.at + 3];
    if (!pc_struct) malformed("the push-constant variable's pointer type is missing");
    for (const Inst& in : insts)
      if (in.op == kOpTypeStruct && words[in.at + 1] == *pc_struct) members = in.count - 2;
  }

  // Rewrite in place: every PushConstant class becomes the storage class; every DescriptorSet
  // becomes 0 (GL has one binding namespace); the block decoration follows the class.
  for (const Inst& in : insts) {
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
  std::vector<std::uint32_t> added = {word(4, kOpDecorate), *pc_var, kDecoDescriptorSet, 0,
                                      word(4, kOpDecorate), *pc_var, kDecoBinding,       params_binding};
  for (std::uint32_t m = 0; m < members; ++m)
    added.insert(added.end(), {word(4, kOpMemberDecorate), *pc_struct, m, kDecoNonWritable});
  if (last_annotation_end == 0) malformed("no decorations (a push-constant block always has Offsets)");
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(last_annotation_end), added.begin(), added.end());
  return out;
}

namespace {

/// Owns a SPIRV-Cross context (everything it allocates goes with it).
struct ContextDeleter {
  void operator()(spvc_context c) const noexcept { spvc_context_destroy(c); }
};
using Context = std::unique_ptr<std::remove_pointer_t<spvc_context>, ContextDeleter>;

[[noreturn]] void cross_failed(spvc_context ctx, const std::string& kernel_name, const char* step) {
  const char* why = spvc_context_get_last_error_string(ctx);
  fail(ErrorCategory::not_supported,
       "kernel '" + kernel_name + "' cannot be expressed as OpenGL GLSL (SPIRV-Cross, " + step +
           "): " + (why && *why ? why : "no message"),
       "run it on a driver with GL_ARB_gl_spirv (OpenGL 4.6), or on Vulkan, or avoid the construct named.");
}

/// Returns words with each constant of spec (by SpecId) given its value as its default:
/// OpSpecConstant's literal replaced, OpSpecConstantTrue/False switched by the value.
std::vector<std::uint32_t> bake_spec_constants(std::span<const std::uint32_t> words, std::span<const SpecEntry> spec) {
  std::vector<std::uint32_t> out(words.begin(), words.end());
  if (spec.empty()) return out;
  const std::vector<Inst> insts = instructions(words);
  std::map<std::uint32_t, std::uint32_t> bits_by_result;  // result id -> value
  for (const Inst& in : insts)
    if (in.op == kOpDecorate && in.count >= 4 && words[in.at + 2] == kDecoSpecId)
      for (const SpecEntry& s : spec)
        if (s.id == words[in.at + 3]) bits_by_result[words[in.at + 1]] = s.bits;
  for (const Inst& in : insts) {
    std::uint32_t* w = &out[in.at];
    if ((in.op == kOpSpecConstantTrue || in.op == kOpSpecConstantFalse) && in.count >= 3) {
      if (auto it = bits_by_result.find(w[2]); it != bits_by_result.end())
        w[0] = word(in.count, it->second ? kOpSpecConstantTrue : kOpSpecConstantFalse);
    } else if (in.op == kOpSpecConstant && in.count >= 4) {
      // 32-bit constants have one literal word; vgpu's values are all 32-bit.
      if (auto it = bits_by_result.find(w[2]); it != bits_by_result.end() && in.count == 4) w[3] = it->second;
    }
  }
  return out;
}

}  // namespace

std::string to_opengl_glsl(std::span<const std::uint32_t> words, const std::string& entry,
                           std::span<const SpecEntry> spec, int glsl_version, const std::string& kernel_name) {
  // GL GLSL has no specialization: each constant's value becomes its default, which
  // SPIRV-Cross then writes (the local size's constants included).
  const std::vector<std::uint32_t> baked = bake_spec_constants(words, spec);
  spvc_context raw = nullptr;
  if (spvc_context_create(&raw) != SPVC_SUCCESS)
    fail(ErrorCategory::out_of_memory, "SPIRV-Cross could not create a context.", "free memory and try again.");
  Context ctx(raw);
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(raw, baked.data(), baked.size(), &ir) != SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "parsing");
  spvc_compiler compiler = nullptr;
  if (spvc_context_create_compiler(raw, SPVC_BACKEND_GLSL, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) !=
      SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "creating the GLSL compiler");
  if (spvc_compiler_set_entry_point(compiler, entry.c_str(), SpvExecutionModelGLCompute) != SPVC_SUCCESS)
    fail(ErrorCategory::compile_error, "kernel '" + kernel_name + "' has no compute entry point '" + entry + "'.",
         "name the module's GLCompute entry point (DialectSource::entry).");

  spvc_compiler_options options = nullptr;
  if (spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS)
    cross_failed(raw, kernel_name, "options");
  spvc_compiler_options_set_uint(options, SPVC_COMPILER_OPTION_GLSL_VERSION, static_cast<unsigned>(glsl_version));
  spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_ES, SPVC_FALSE);
  spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_FALSE);
  spvc_compiler_install_compiler_options(compiler, options);

  const char* text = nullptr;
  if (spvc_compiler_compile(compiler, &text) != SPVC_SUCCESS || text == nullptr)
    cross_failed(raw, kernel_name, "compiling");
  return std::string(text);
}

}  // namespace vgpu::shader
