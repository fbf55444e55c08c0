// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/spirv_fuzz.cpp — vgpu-fuzz-spirv: arbitrary bytes as the payload of an L2 SPIR-V
// entry, through what vgpu does with it before a driver sees it: the store's payload check
// (SPIRV-Tools' validator, cache::payload_problem), the conversion to words and the pipeline
// interface check of the Vulkan backend (backends/vulkan/spirv_interface.cpp). docs/fuzzing.md.
//
// The interface check runs on every input that is whole words, not only on validated ones (as
// vgpu does): SPIRV-Tools is not instrumented, so libFuzzer gets no guidance towards modules
// the validator accepts, and the interface code must not depend on the validator to be safe.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "spirv_interface.hpp"
#include "vgpu/cache/payload_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const bool valid = vgpu::cache::payload_problem(vgpu::cache::EntryKind::spirv, bytes).empty();
  if (size % 4 != 0) {
    if (valid) std::abort();  // the check never accepts a partial word
    return 0;
  }
  // As backends/vulkan/vk_pipeline.cpp turns an L2 payload into words.
  std::vector<std::uint32_t> words(size / 4);
  if (size) std::memcpy(words.data(), data, size);
  // The scale-add test kernel's pipeline, and a 2-D one with no push constants.
  const std::uint32_t slots3[] = {0, 1, 2}, slots2[] = {0, 1};
  vgpu::vulkan::PipelineInterface a{slots3, 16, {64, 1, 1}}, b{slots2, 0, {16, 16, 1}};
  (void)vgpu::vulkan::spirv_interface_problem(words, a);
  (void)vgpu::vulkan::spirv_interface_problem(words, b);
  return 0;
}
