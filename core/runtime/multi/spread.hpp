// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/spread.hpp — the one engine that spreads items of a batch over the devices of a set:
// split by weight, one thread per device, a failed device's rest rerun on the others. Cache
// (through ShardedDatabase) and QueuePipelineSet use it (docs/scale-out.md, "In one process").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vgpu/error.hpp"

namespace vgpu::detail {

/// What one spread() did, per device of the set (index = position in the set).
struct SpreadRecord {
  std::vector<std::uint32_t> first_shares;  ///< the first split (empty when none was made)
  std::vector<std::uint64_t> items;         ///< items each device finished
  std::vector<std::string> failures;        ///< "<id>: <error>" per failed device, in order
  std::uint64_t rerun = 0;                  ///< items moved off failed devices
};

/// How spread() is told what to do; every callback but weights runs on device threads.
struct SpreadTask {
  /// "<who>" in messages (e.g. "Cache", "ShardedDatabase", "QueuePipelineSet").
  std::string who;
  /// The op's name in messages ("matmul", a queue kernel's name).
  std::string op;
  /// The set's device ids, in its order.
  std::vector<std::string> ids;
  /// Current weights per device (non-negative; called once per round, on the caller's thread).
  std::function<std::vector<double>()> weights;
  /// Computes items [begin, end) on device dev, advancing done past each item it finished (so a
  /// failure part way reruns only the rest). Called on that device's own thread.
  std::function<void(std::size_t dev, std::uint32_t begin, std::uint32_t end, std::uint32_t& done)> work;
  /// Called (caller's thread) once per device that failed, with "<id>: <error>": demote it, leave it out.
  std::function<void(std::size_t dev, const std::string& failure)> failed;
  /// Called (caller's thread) once at the end, also when spread() throws: fold the record into stats.
  std::function<void(const SpreadRecord&)> record;
};

/// Runs items [0, n) over the set: split by task.weights() (split_by_weight), one thread per
/// device with a share (the last on the caller's), a device failure's unfinished items split again
/// over the devices still working. Throws unavailable (with a Fix, naming each failure) when no
/// device is left, and rethrows any other error of a device's work after its threads finished.
void spread(const SpreadTask& task, std::uint32_t n);

}  // namespace vgpu::detail
