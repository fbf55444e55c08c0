// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_store.hpp — the one store of measurements: every record
// vgpu measures and keeps (device selections, the pointers to the last one, prediction models,
// variant choices) is a JSON payload in the runtime's L2 store (DiskStore, EntryKind::selection)
// under a key text that holds the fingerprints of what was measured, so a changed driver or
// device never reuses an old record. Each record kind has its strict reader; load_record is the
// one way to read one, and drops what the reader refuses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

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

/// Returns the label a record under key_text is stored with, naming it for people (`vgpu-probe
/// cache list`): "selection: matmul class 18", "prediction model: axpy on vulkan:0", ...
std::string record_label(std::string_view key_text);

/// Logs text as a warning (the log layer, kept out of this header).
void warn_dropped_record(const std::string& text);

/// Reads the record stored under key_text with read, a strict reader (std::string_view text,
/// std::string& why) -> std::optional<Record>. A record read refuses — the store's checksums
/// passed, so it was written so: another build, a tool, a hand edit — is deleted (counted as
/// rejected "invalid") with one warning, warning(why); the caller then measures again.
template <class Read, class Warning>
auto load_record(cache::DiskStore& store, const std::string& key_text, Read&& read, Warning&& warning)
    -> decltype(read(std::string_view{}, std::declval<std::string&>())) {
  const std::optional<std::string> text = load_selection_text(store, key_text);
  if (!text) return std::nullopt;
  std::string why;
  auto record = read(std::string_view(*text), why);
  if (!record) {
    warn_dropped_record(warning(why));
    reject_selection(store, key_text);
  }
  return record;
}

}  // namespace vgpu::detail
