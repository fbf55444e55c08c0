// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_json.hpp — a Selection as the JSON payload of a `select` L2 entry
// (docs/cache-format.md, "Selection entries"), and the strict reader of it. The payload comes
// from disk, so the reader treats it as untrusted: every field must be there with its type and
// in its range (a huge floating-point "runs" once reached an int conversion, undefined
// behaviour), or the whole entry is refused.
// Thread-safety: pure functions, safe from any number of threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Returns the JSON text that persists s (version 2: with each candidate's result check).
std::string selection_to_json(const Selection& s);

/// Reads a persisted selection: nothing, with *why naming the first bad field, when text is
/// not JSON, not version 2, lacks a field, has one of the wrong type (a number where a
/// string belongs, a fraction where an integer does), or out of range (negative or
/// non-finite seconds, a count beyond int, a size class over 64, a shape dimension of 0, no
/// candidates, a check that is not one of ResultCheck's names), or marks a candidate that
/// computed a wrong result eligible. Never throws for bad text. source is set to persisted.
std::optional<Selection> selection_from_json(std::string_view text, std::string* why = nullptr);

}  // namespace vgpu::detail
