// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_store.hpp — device selections on disk, next to the L2 kernel cache
// (the runtime's DiskStore, EntryKind::selection): JSON payloads keyed by op, size class and the
// fingerprints of every device, so a changed driver or device never reuses an old choice.
#pragma once

#include <optional>
#include <string>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::detail {

/// Returns the selection stored under key_text, or nothing (absent, disabled, damaged — a
/// damaged entry is removed by the store; one whose JSON the strict reader refuses is dropped
/// through drop_selection).
std::optional<Selection> load_selection(cache::DiskStore& store, const std::string& key_text);

/// Deletes the selection stored under key_text, counted as rejected "invalid", with one
/// warning naming why (the caller then calibrates again).
void drop_selection(cache::DiskStore& store, const std::string& key_text, const std::string& why);

/// Stores selection under key_text (a no-op when the store is disabled, e.g. VGPU_CACHE_DISABLE=1).
void store_selection(cache::DiskStore& store, const std::string& key_text, const Selection& selection);

/// Returns the raw payload stored under key_text as a selection entry (other JSON records
/// that share the selection kind and its key scheme, e.g. variant choices), or nothing.
std::optional<std::string> load_selection_text(cache::DiskStore& store, const std::string& key_text);

/// Stores text under key_text as a selection entry (a no-op when the store is disabled).
void store_selection_text(cache::DiskStore& store, const std::string& key_text, const std::string& text,
                          std::uint64_t cost_us);

/// Deletes the selection entry under key_text, counted as rejected "invalid" (no log: the caller warns).
void reject_selection(cache::DiskStore& store, const std::string& key_text);

}  // namespace vgpu::detail
