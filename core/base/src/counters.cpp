// SPDX-License-Identifier: Apache-2.0
// core/base/src/counters.cpp — snapshots and arithmetic of the steady-state counters.
#include "vgpu/counters.hpp"

namespace vgpu {

// An X-macro list, which clang-format-14 lays out differently on each run.
// clang-format off
#define VGPU_COUNTER_FIELDS(X) \
  X(compiles) X(l1_hits) X(l1_misses) X(l1_evictions) X(persistent_evictions) X(binds) \
  X(allocations) X(allocated_bytes) X(freed_bytes) X(dispatches) X(submits) X(bytes_up) \
  X(bytes_down) X(source_compiles) X(l2_hits) X(l2_misses) X(l2_writes) X(l2_rejected) \
  X(l3_hits) X(pipeline_builds) X(device_losses) X(recoveries) X(variant_measurements) X(variant_loads) \
  X(timed_dispatches) X(device_ns)
// clang-format on

CounterSnapshot CounterSnapshot::operator-(const CounterSnapshot& e) const noexcept {
  CounterSnapshot r;
#define X(f) r.f = f - e.f;
  VGPU_COUNTER_FIELDS(X)
#undef X
  return r;
}

CounterSnapshot CounterSnapshot::operator+(const CounterSnapshot& o) const noexcept {
  CounterSnapshot r;
#define X(f) r.f = f + o.f;
  VGPU_COUNTER_FIELDS(X)
#undef X
  return r;
}

std::string CounterSnapshot::to_string() const {
  std::string s;
#define X(f) s += (s.empty() ? "" : " ") + std::string(#f) + "=" + std::to_string(f);
  VGPU_COUNTER_FIELDS(X)
#undef X
  return s;
}

CounterSnapshot Counters::snapshot() const noexcept {
  CounterSnapshot r;
#define X(f) r.f = f.load(std::memory_order_relaxed);
  VGPU_COUNTER_FIELDS(X)
#undef X
  return r;
}

}  // namespace vgpu
