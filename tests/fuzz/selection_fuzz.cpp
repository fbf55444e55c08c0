// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/selection_fuzz.cpp — vgpu-fuzz-selection: arbitrary bytes as the JSON payload of a
// persisted selection, through the strict reader (core/runtime/selection/selection_json.cpp). What it accepts
// must survive a round trip through the writer unchanged. docs/fuzzing.md.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "selection_json.hpp"

namespace {

bool same(const vgpu::Selection& a, const vgpu::Selection& b) {
  if (a.op != b.op || a.calibration_shape != b.calibration_shape || a.size_class != b.size_class ||
      a.device != b.device || a.calibration_seconds != b.calibration_seconds ||
      a.candidates.size() != b.candidates.size())
    return false;
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const auto &x = a.candidates[i], &y = b.candidates[i];
    if (x.device != y.device || x.eligible != y.eligible || x.seconds != y.seconds || x.runs != y.runs ||
        x.note != y.note || x.check != y.check || x.check_error != y.check_error)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto s = vgpu::detail::selection_from_json(text, &why);
  if (!s) {
    if (why.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  const auto again = vgpu::detail::selection_from_json(vgpu::detail::selection_to_json(*s), &why);
  if (!again || !same(*s, *again)) std::abort();
  return 0;
}
