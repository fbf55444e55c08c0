// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/device_set.cpp — building and checking device sets; their shares of a split.
#include "vgpu/device_set.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "vgpu/error.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/selection.hpp"
#include "vgpu/types.hpp"

namespace vgpu {
namespace {

std::string joined(const std::vector<DeviceInfo>& infos) {
  std::string s;
  for (const DeviceInfo& d : infos) s += (s.empty() ? "" : ", ") + d.id();
  return s.empty() ? "none" : s;
}

/// Finds the device id names in runtime, or fails saying why not (position is 1-based).
DeviceInfo find_device(Runtime& runtime, const std::string& id, std::size_t position) {
  const std::string where = "DeviceSet: device " + std::to_string(position) + " ";
  if (id.empty())
    fail(ErrorCategory::invalid_argument, where + "is empty.",
         "list devices as backend:index separated by commas, e.g. VGPU_DEVICES=cuda:0,cuda:1 (no empty items).");
  const std::size_t colon = id.find(':');
  const std::optional<BackendKind> kind = find_backend_kind(id.substr(0, colon));
  std::optional<std::uint64_t> index;
  if (colon != std::string::npos) index = config_parse::integer(std::string_view(id).substr(colon + 1), 0, UINT32_MAX);
  if (!kind || !index)
    fail(ErrorCategory::invalid_argument, where + "'" + id + "' is not backend:index.",
         "name devices as backend:index, e.g. cuda:1 or cpu:0 (vgpu-probe lists the ids).");
  for (const DeviceInfo& d : runtime.backend_devices(*kind))
    if (d.index == *index) return d;
  fail(ErrorCategory::invalid_argument,
       where + "'" + id + "' does not exist here (devices: " + joined(runtime.devices()) + ").",
       "use one of the listed ids (vgpu-probe lists them; VGPU_CPU_DEVICES=N gives N CPU devices for tests).");
}

}  // namespace

std::vector<std::uint32_t> split_by_weight(const std::vector<double>& weights, std::uint32_t items) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (weights.empty() || !(total > 0) ||
      std::any_of(weights.begin(), weights.end(), [](double w) { return !(w >= 0); }))
    fail(ErrorCategory::invalid_argument, "split_by_weight: the weights must be non-negative with a positive sum.",
         "pass at least one positive weight.");
  std::vector<std::uint32_t> parts(weights.size());
  std::vector<std::pair<double, std::size_t>> rest;  // (remainder, index)
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = double(items) * weights[i] / total;
    parts[i] = static_cast<std::uint32_t>(std::floor(exact));
    given += parts[i];
    if (weights[i] > 0) rest.emplace_back(exact - parts[i], i);
  }
  // Largest remainder first; stable, so equal remainders favour the earlier (faster-listed) device.
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t r = 0; given < items; r = (r + 1) % rest.size(), ++given) ++parts[rest[r].second];
  return parts;
}

DeviceSet::DeviceSet(Runtime& runtime, const std::vector<std::string>& ids) : runtime_(&runtime) {
  if (ids.empty())
    fail(ErrorCategory::invalid_argument, "DeviceSet: the list of devices is empty.",
         "name at least one device, e.g. {\"cpu:0\"}, or use DeviceSet::all(runtime).");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    DeviceInfo d = find_device(runtime, ids[i], i + 1);
    for (const DeviceInfo& seen : infos_)
      if (seen.id() == d.id())
        fail(ErrorCategory::invalid_argument, "DeviceSet: device '" + d.id() + "' is listed twice.",
             "list each device once (a device cannot run two shares faster than one).");
    infos_.push_back(std::move(d));
  }
}

DeviceSet::DeviceSet(const std::vector<std::string>& ids) : DeviceSet(Runtime::global(), ids) {}

DeviceSet DeviceSet::all(Runtime& runtime, const std::function<bool(const DeviceInfo&)>& keep) {
  std::vector<DeviceInfo> kept;
  const std::vector<DeviceInfo> found = runtime.devices();
  for (const DeviceInfo& d : found)
    if (!keep || keep(d)) kept.push_back(d);
  if (kept.empty())
    fail(ErrorCategory::invalid_argument,
         "DeviceSet::all: no device is left (" + std::to_string(found.size()) + " found: " + joined(found) + ").",
         "loosen the filter, or check the backends with vgpu-probe.");
  return DeviceSet(Found{}, runtime, std::move(kept));
}

DeviceSet DeviceSet::from_config(Runtime& runtime) {
  const std::vector<std::string>& ids = runtime.config().devices;
  return ids.empty() ? all(runtime) : DeviceSet(runtime, ids);
}

DeviceSet DeviceSet::from_config() { return from_config(Runtime::global()); }

std::vector<std::string> DeviceSet::ids() const {
  std::vector<std::string> out;
  for (const DeviceInfo& d : infos_) out.push_back(d.id());
  return out;
}

Device DeviceSet::open(std::size_t i) const {
  if (i >= infos_.size())
    fail(ErrorCategory::invalid_argument,
         "DeviceSet::open: index " + std::to_string(i) + " is past the set's " + std::to_string(infos_.size()) +
             " devices.",
         "pass an index below size().");
  return runtime_->open(infos_[i]);
}

std::vector<double> DeviceSet::weights(const std::string& op, const Shape& shape) const {
  std::vector<double> w(infos_.size(), -1.0);  // -1: no time measured
  std::vector<bool> demoted(infos_.size(), false);
  if (infos_.size() > 1) {
    const Selection s = runtime_->explain(op, shape);
    for (std::size_t i = 0; i < infos_.size(); ++i)
      for (const SelectionCandidate& c : s.candidates)
        if (c.device == infos_[i].id()) {
          if (c.demoted)
            demoted[i] = true;
          else if (c.eligible && c.seconds > 0)
            w[i] = 1.0 / c.seconds;
        }
  }
  std::vector<double> known;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!demoted[i] && w[i] > 0) known.push_back(w[i]);
  double median = 1.0;
  if (!known.empty()) {
    std::sort(known.begin(), known.end());
    median = known.size() % 2 ? known[known.size() / 2] : (known[known.size() / 2 - 1] + known[known.size() / 2]) / 2;
  }
  double total = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = demoted[i] ? 0.0 : (w[i] > 0 ? w[i] : median);
    total += w[i];
  }
  if (!(total > 0))
    fail(ErrorCategory::unavailable,
         "DeviceSet: every device of the set (" + joined(infos_) + ") is demoted for " + op + ".",
         "add a device that works to the set, or make a new Runtime once the devices are fixed.");
  for (double& x : w) x /= total;
  return w;
}

std::vector<std::uint32_t> DeviceSet::shares(const std::string& op, const Shape& shape, std::uint32_t items) const {
  return split_by_weight(weights(op, shape), items);
}

}  // namespace vgpu
