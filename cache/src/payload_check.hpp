// SPDX-License-Identifier: Apache-2.0
// cache/src/payload_check.hpp — the store's side of vgpu/cache/payload_check.hpp: one call that
// DiskStore::load() and list(verify = true) make on a payload whose checksum matched.
// Internal to cache/src.
#pragma once

#include <span>

#include "disk_store_format.hpp"
#include "vgpu/cache/payload_check.hpp"

namespace vgpu::cache::detail {

/// Returns Problem{"invalid", why} when payload_problem() refuses the payload of an entry of
/// kind, else no problem.
inline Problem check_payload(EntryKind kind, std::span<const std::uint8_t> payload) {
  std::string why = payload_problem(kind, payload);
  if (why.empty()) return {};
  return Problem{"invalid", std::move(why)};
}

}  // namespace vgpu::cache::detail
