// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_capabilities.cpp — the two capability tables (see the header). A
// requirement is a list of alternatives, any of which suffices: "4.6" (that GL version or
// newer), a GL extension ("GL_…", from GL_EXTENSIONS) or a SPIR-V extension ("SPV_…", from
// GL_SPIR_V_EXTENSIONS). An empty list: always there.
#include "gl_capabilities.hpp"

#include <algorithm>
#include <map>

namespace vgpu::opengl {
namespace {

using Requirement = std::vector<const char*>;
using Table = std::map<std::string, Requirement, std::less<>>;

// GL_KHR_shader_subgroup adds the same eight GroupNonUniform* capabilities on both paths.
Table with_khr_shader_subgroup(Table table) {
  for (const char* capability :
       {"GroupNonUniform", "GroupNonUniformVote", "GroupNonUniformArithmetic", "GroupNonUniformBallot",
        "GroupNonUniformShuffle", "GroupNonUniformShuffleRelative", "GroupNonUniformClustered", "GroupNonUniformQuad"})
    table.emplace(capability, Requirement{"GL_KHR_shader_subgroup"});
  return table;
}

// Path A: OpenGL 4.6's SPIR-V environment (appendix C; GL_ARB_gl_spirv's list for 4.5) —
// the capabilities a driver must accept, and those an extension adds. Not listed: refused.
const Table& gl_spirv_table() {
  static const Table kTable = with_khr_shader_subgroup({
      {"Matrix", {}},
      {"Shader", {}},
      {"Geometry", {}},
      {"Tessellation", {}},
      {"Float64", {}},
      {"AtomicStorage", {}},
      {"TessellationPointSize", {}},
      {"GeometryPointSize", {}},
      {"ImageGatherExtended", {}},
      {"StorageImageMultisample", {}},
      {"UniformBufferArrayDynamicIndexing", {}},
      {"SampledImageArrayDynamicIndexing", {}},
      {"StorageBufferArrayDynamicIndexing", {}},
      {"StorageImageArrayDynamicIndexing", {}},
      {"ClipDistance", {}},
      {"CullDistance", {}},
      {"ImageCubeArray", {}},
      {"SampleRateShading", {}},
      {"ImageRect", {}},
      {"SampledRect", {}},
      {"Sampled1D", {}},
      {"Image1D", {}},
      {"SampledCubeArray", {}},
      {"SampledBuffer", {}},
      {"ImageBuffer", {}},
      {"ImageMSArray", {}},
      {"StorageImageExtendedFormats", {}},
      {"ImageQuery", {}},
      {"DerivativeControl", {}},
      {"InterpolationFunction", {}},
      {"TransformFeedback", {}},
      {"GeometryStreams", {}},
      {"StorageImageWriteWithoutFormat", {}},
      {"MultiViewport", {}},
      {"DrawParameters", {"4.6", "GL_ARB_shader_draw_parameters"}},
      {"AtomicStorageOps", {"4.6", "GL_ARB_shader_atomic_counter_ops"}},
      {"SubgroupVoteKHR", {"4.6", "GL_ARB_shader_group_vote"}},
      {"SubgroupBallotKHR", {"GL_ARB_shader_ballot"}},
      {"Int64", {"GL_ARB_gpu_shader_int64"}},
      {"Int64Atomics", {"GL_NV_shader_atomic_int64"}},
      {"StorageImageReadWithoutFormat", {"GL_EXT_shader_image_load_formatted"}},
      {"ShaderViewportIndexLayerEXT", {"GL_ARB_shader_viewport_layer_array"}},
      {"SampleMaskPostDepthCoverage", {"GL_ARB_post_depth_coverage"}},
      {"ShaderClockKHR", {"GL_ARB_shader_clock"}},
      {"Float16", {"GL_AMD_gpu_shader_half_float"}},
      {"Int16", {"GL_AMD_gpu_shader_int16"}},
      {"StorageBuffer16BitAccess", {"SPV_KHR_16bit_storage"}},
      {"StorageUniform16", {"SPV_KHR_16bit_storage"}},
      {"StoragePushConstant16", {"SPV_KHR_16bit_storage"}},
      {"StorageInputOutput16", {"SPV_KHR_16bit_storage"}},
      {"StorageBuffer8BitAccess", {"SPV_KHR_8bit_storage"}},
      {"UniformAndStorageBuffer8BitAccess", {"SPV_KHR_8bit_storage"}},
      {"StoragePushConstant8", {"SPV_KHR_8bit_storage"}},
      {"VariablePointersStorageBuffer", {"SPV_KHR_variable_pointers"}},
      {"VariablePointers", {"SPV_KHR_variable_pointers"}},
      {"DeviceGroup", {"SPV_KHR_device_group"}},
      {"MultiView", {"SPV_KHR_multiview"}},
      {"AtomicFloat32AddEXT", {"SPV_EXT_shader_atomic_float_add"}},
  });
  return kTable;
}

// Path B: the capabilities whose GLSL SPIRV-Cross writes with an extension (its own
// "#extension … : require" choices); the rest it writes in core GLSL or refuses itself.
const Table& cross_glsl_table() {
  static const Table kTable = with_khr_shader_subgroup({
      {"Float16", {"GL_AMD_gpu_shader_half_float", "GL_NV_gpu_shader5"}},
      {"Int16", {"GL_AMD_gpu_shader_int16", "GL_NV_gpu_shader5"}},
      // 16-bit storage needs the 16-bit type it stores (half or int16) in the text.
      {"StorageBuffer16BitAccess", {"GL_AMD_gpu_shader_half_float", "GL_AMD_gpu_shader_int16", "GL_NV_gpu_shader5"}},
      {"StorageUniform16", {"GL_AMD_gpu_shader_half_float", "GL_AMD_gpu_shader_int16", "GL_NV_gpu_shader5"}},
      {"StoragePushConstant16", {"GL_AMD_gpu_shader_half_float", "GL_AMD_gpu_shader_int16", "GL_NV_gpu_shader5"}},
      {"StorageInputOutput16", {"GL_AMD_gpu_shader_half_float", "GL_AMD_gpu_shader_int16", "GL_NV_gpu_shader5"}},
      {"Int8", {"GL_EXT_shader_explicit_arithmetic_types_int8"}},
      {"StorageBuffer8BitAccess", {"GL_EXT_shader_8bit_storage"}},
      {"UniformAndStorageBuffer8BitAccess", {"GL_EXT_shader_8bit_storage"}},
      {"StoragePushConstant8", {"GL_EXT_shader_8bit_storage"}},
      {"Int64", {"GL_ARB_gpu_shader_int64", "GL_NV_gpu_shader5"}},
      {"Int64Atomics", {"GL_NV_shader_atomic_int64"}},
      {"SubgroupBallotKHR", {"GL_ARB_shader_ballot"}},
      {"SubgroupVoteKHR", {"4.6", "GL_ARB_shader_group_vote"}},
      {"ShaderClockKHR", {"GL_ARB_shader_clock"}},
      {"StorageImageReadWithoutFormat", {"GL_EXT_shader_image_load_formatted"}},
      {"AtomicFloat32AddEXT", {"GL_NV_shader_atomic_float"}},
  });
  return kTable;
}

bool contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool offered(std::string_view alternative, const GlCapabilityContext& gl) {
  if (alternative.starts_with("SPV_")) return contains(gl.spirv_extensions, alternative);
  if (alternative.starts_with("GL_")) return contains(gl.extensions, alternative);
  return gl.version >= (alternative[0] - '0') * 10 + (alternative[2] - '0');  // "4.6"
}

std::string alternatives_text(const Requirement& need) {
  std::string out;
  for (std::size_t i = 0; i < need.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == need.size() ? " or " : ", ");
    const std::string_view a = need[i];
    out += a.starts_with("SPV_")  ? "GL_SPIR_V_EXTENSIONS listing " + std::string(a)
           : a.starts_with("GL_") ? std::string(a)
                                  : "OpenGL " + std::string(a);
  }
  return out;
}

// The first capability the table does not allow on gl; listed_only: an unlisted one is refused.
std::string first_outside(const Table& table, bool listed_only, const std::vector<std::string>& capabilities,
                          const GlCapabilityContext& gl) {
  for (const std::string& cap : capabilities) {
    const auto it = table.find(cap);
    if (it == table.end()) {
      if (listed_only) return cap + " (not in OpenGL's SPIR-V environment)";
      continue;
    }
    const Requirement& need = it->second;
    if (need.empty() || std::any_of(need.begin(), need.end(), [&](const char* a) { return offered(a, gl); })) continue;
    return cap + " (needs " + alternatives_text(need) + ")";
  }
  return {};
}

}  // namespace

std::string capability_outside_gl_spirv(const std::vector<std::string>& capabilities, const GlCapabilityContext& gl) {
  return first_outside(gl_spirv_table(), true, capabilities, gl);
}

std::string capability_outside_cross_glsl(const std::vector<std::string>& capabilities, const GlCapabilityContext& gl) {
  return first_outside(cross_glsl_table(), false, capabilities, gl);
}

}  // namespace vgpu::opengl
