// SPDX-License-Identifier: Apache-2.0
// cache/src/spirv_check.cpp — SPIR-V payloads through SPIRV-Tools' validator (in the
// run-time-loaded SPIR-V toolchain, vgpu/shader_toolchain.hpp), so a damaged module is refused
// here instead of reaching a driver (lavapipe, for one, does not validate and can crash on a
// malformed module). Without the toolchain only the size, the magic, the instruction stream
// and the entry point are checked: no driver loads SPIR-V then, since the Vulkan and OpenGL
// backends need the toolchain to run at all.
#include <cstring>
#include <string_view>
#include <vector>

#include "vgpu/cache/payload_check.hpp"
#include "vgpu/shader_toolchain.hpp"
#include "vgpu/spirv_instructions.hpp"

namespace vgpu::cache {
namespace {

// SPIR-V enums used below (spirv.h values; the header is not needed for these few).
constexpr std::uint32_t kOpEntryPoint = 15;
constexpr std::uint32_t kExecutionModelGLCompute = 5;

// Whether the module has an OpEntryPoint GLCompute named "main" (the pipeline's pName): the
// validator accepts a module without one, and a driver asked for a missing entry point may not
// survive it.
bool has_compute_main(std::span<const std::uint32_t> words, const std::vector<spirv::Instruction>& insts) {
  for (const spirv::Instruction& in : insts) {
    // Operands: execution model, function id, the name as a NUL-terminated string in words.
    if (in.op != kOpEntryPoint || in.count < 4 || words[in.at + 1] != kExecutionModelGLCompute) continue;
    const char* text = reinterpret_cast<const char*>(words.data() + in.at + 3);
    const std::size_t room = std::size_t{in.count - 3} * 4;
    if (strnlen(text, room) == 4 && std::memcmp(text, "main", 4) == 0) return true;
  }
  return false;
}

}  // namespace

std::string spirv_problem(std::span<const std::uint8_t> bytes) {
  if (bytes.size() % 4 != 0 || bytes.size() < 20)
    return "not SPIR-V: " + std::to_string(bytes.size()) + " bytes are not a whole module of 32-bit words";
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != spirv::kMagic) return "not SPIR-V: the first word is not the SPIR-V magic number";
  if (const toolchain::ShaderToolchain* tools = toolchain::shader_toolchain()) {
    std::string problem;
    toolchain::ToolchainFailure failure;
    if (!tools->validate(words, toolchain::TargetEnv::vulkan1_1, &problem, &failure))
      return "SPIR-V could not be validated: " + failure.problem;
    if (!problem.empty())
      return "SPIR-V validation (" + std::string(kSpirvTargetEnv) +
             ") failed: " + problem.substr(0, problem.find('\n'));
  }
  std::vector<spirv::Instruction> insts;
  if (std::string why; !spirv::split_instructions(words, &insts, &why)) return "SPIR-V could not be parsed: " + why;
  if (!has_compute_main(words, insts)) return "the SPIR-V module has no GLCompute entry point named \"main\"";
  return {};
}

}  // namespace vgpu::cache
