// core/src/selection_store.hpp — device selections on disk, next to the L2 kernel cache
// (DiskStore, EntryKind::selection): JSON payloads keyed by op, size class and the
// fingerprints of every device, so a changed driver or device never reuses an old choice.
#pragma once

#include <optional>
#include <string>

#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Returns the selection stored under key_text, or nothing (absent, disabled, damaged — a
/// damaged entry is removed by the store).
std::optional<Selection> load_selection(const std::string& key_text);

/// Stores selection under key_text (a no-op when the store is disabled, e.g. VGPU_CACHE_DISABLE=1).
void store_selection(const std::string& key_text, const Selection& selection);

}  // namespace vgpu::detail
