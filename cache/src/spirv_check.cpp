// SPDX-License-Identifier: Apache-2.0
// cache/src/spirv_check.cpp — SPIR-V payloads through SPIRV-Tools' validator (its C API), so a
// damaged module is refused here instead of reaching a driver (lavapipe, for one, does not
// validate and can crash on a malformed module). Built without SPIRV-Tools (no Vulkan backend
// and no spirv-tools package), only the size and magic are checked: no driver loads SPIR-V then.
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "vgpu/cache/payload_check.hpp"

#if VGPU_HAVE_SPIRV_TOOLS
#include <spirv-tools/libspirv.h>
#endif

namespace vgpu::cache {
namespace {

constexpr std::uint32_t kSpirvMagic = 0x07230203u;

#if VGPU_HAVE_SPIRV_TOOLS

// SPIR-V enums used below (spirv.h values; the header is not needed for these few).
constexpr std::uint16_t kOpEntryPoint = 15;
constexpr std::uint32_t kExecutionModelGLCompute = 5;

struct ContextDeleter {
  void operator()(spv_context c) const noexcept { spvContextDestroy(c); }
};
struct OptionsDeleter {
  void operator()(spv_validator_options o) const noexcept { spvValidatorOptionsDestroy(o); }
};
struct DiagnosticDeleter {
  void operator()(spv_diagnostic d) const noexcept { spvDiagnosticDestroy(d); }
};
using Diagnostic = std::unique_ptr<spv_diagnostic_t, DiagnosticDeleter>;

std::string diagnostic_text(const Diagnostic& d, std::string_view fallback) {
  std::string text = d && d->error ? d->error : std::string(fallback);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.substr(0, text.find('\n'));  // the first line names the problem; the rest is a dump
}

// Whether the module has an OpEntryPoint GLCompute named "main" (the pipeline's pName): the
// validator accepts a module without one, and a driver asked for a missing entry point may not
// survive it.
spv_result_t find_main(void* user, const spv_parsed_instruction_t* inst) {
  if (inst->opcode != kOpEntryPoint || inst->num_operands < 3) return SPV_SUCCESS;
  const spv_parsed_operand_t& name = inst->operands[2];
  const char* text = reinterpret_cast<const char*>(inst->words + name.offset);
  const std::size_t room = std::size_t{name.num_words} * 4;
  if (inst->words[inst->operands[0].offset] == kExecutionModelGLCompute && strnlen(text, room) == 4 &&
      std::memcmp(text, "main", 4) == 0)
    *static_cast<bool*>(user) = true;
  return SPV_SUCCESS;
}

#endif

}  // namespace

std::string spirv_problem(std::span<const std::uint8_t> bytes) {
  if (bytes.size() % 4 != 0 || bytes.size() < 20)
    return "not SPIR-V: " + std::to_string(bytes.size()) + " bytes are not a whole module of 32-bit words";
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  if (words[0] != kSpirvMagic) return "not SPIR-V: the first word is not the SPIR-V magic number";
#if VGPU_HAVE_SPIRV_TOOLS
  const std::unique_ptr<spv_context_t, ContextDeleter> context(spvContextCreate(SPV_ENV_VULKAN_1_1));
  const std::unique_ptr<spv_validator_options_t, OptionsDeleter> options(spvValidatorOptionsCreate());
  if (!context || !options) return "SPIRV-Tools could not create a validator context";
  spv_const_binary_t binary{words.data(), words.size()};
  spv_diagnostic raw = nullptr;
  const spv_result_t valid = spvValidateWithOptions(context.get(), options.get(), &binary, &raw);
  Diagnostic diagnostic(raw);
  if (valid != SPV_SUCCESS)
    return "SPIR-V validation (" + std::string(kSpirvTargetEnv) +
           ") failed: " + diagnostic_text(diagnostic, "no message");
  bool has_main = false;
  raw = nullptr;
  const spv_result_t parsed =
      spvBinaryParse(context.get(), &has_main, words.data(), words.size(), nullptr, find_main, &raw);
  diagnostic.reset(raw);
  if (parsed != SPV_SUCCESS) return "SPIR-V could not be parsed: " + diagnostic_text(diagnostic, "no message");
  if (!has_main) return "the SPIR-V module has no GLCompute entry point named \"main\"";
#endif
  return {};
}

}  // namespace vgpu::cache
