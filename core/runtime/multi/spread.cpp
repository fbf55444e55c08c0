// SPDX-License-Identifier: Apache-2.0
// core/runtime/multi/spread.cpp — spreading a batch's items over a device set (spread.hpp).
#include "spread.hpp"

#include <algorithm>
#include <exception>
#include <thread>

#include "loss_policy.hpp"
#include "vgpu/device_set.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {

namespace {
using Range = std::pair<std::uint32_t, std::uint32_t>;  // [begin, end) of items
}  // namespace

void spread(const SpreadTask& task, std::uint32_t n) {
  const std::size_t count = task.ids.size();
  std::vector<bool> dead(count, false);
  std::vector<Range> pending{{0, n}};
  SpreadRecord rec;
  rec.items.assign(count, 0);
  auto record = [&] {
    if (task.record) task.record(rec);
  };
  while (!pending.empty()) {
    std::vector<double> w = task.weights();
    w.resize(count, 0.0);
    double total_weight = 0;
    for (std::size_t i = 0; i < count; ++i) total_weight += (dead[i] || !(w[i] > 0)) ? (w[i] = 0) : w[i];
    if (!(total_weight > 0)) {
      record();
      std::string why;
      for (const std::string& f : rec.failures) why += "; " + f;
      fail(ErrorCategory::unavailable,
           task.who + ": every device of the set (" + std::to_string(count) + ") failed or is demoted for " + task.op +
               (why.empty() ? std::string(".") : why),
           "check the devices with vgpu-probe, or add a device that works (e.g. cpu:0) to the DeviceSet.");
    }
    std::uint32_t total = 0;
    for (const Range& r : pending) total += r.second - r.first;
    const std::vector<std::uint32_t> parts = split_by_weight(w, total);
    if (rec.first_shares.empty()) rec.first_shares = parts;
    // Cut the pending ranges, in order, into each device's part.
    std::vector<std::vector<Range>> assigned(count);
    std::size_t p = 0;
    std::uint32_t at = pending[0].first;
    for (std::size_t i = 0; i < count; ++i)
      for (std::uint32_t need = parts[i]; need > 0;) {
        const std::uint32_t take = std::min(need, pending[p].second - at);
        assigned[i].emplace_back(at, at + take);
        need -= take;
        at += take;
        if (at == pending[p].second && ++p < pending.size()) at = pending[p].first;
      }
    struct Outcome {
      std::vector<Range> left;  // not computed because the device failed
      std::string failure;
      std::exception_ptr other;  // anything not a device failure: reaches the caller
    };
    std::vector<Outcome> out(count);
    auto run_device = [&](std::size_t i) {
      for (std::size_t r = 0; r < assigned[i].size(); ++r) {
        const auto [begin, end] = assigned[i][r];
        std::uint32_t done = 0;
        try {
          task.work(i, begin, end, done);
          rec.items[i] += end - begin;
        } catch (const Error& e) {
          rec.items[i] += done;
          if (!gives_way(e)) {  // loss_policy.hpp, step 3
            out[i].other = std::current_exception();
            return;
          }
          out[i].failure = task.ids[i] + ": " + e.what();
          out[i].left.emplace_back(begin + done, end);
          out[i].left.insert(out[i].left.end(), assigned[i].begin() + r + 1, assigned[i].end());
          return;
        } catch (...) {
          out[i].other = std::current_exception();
          return;
        }
      }
    };
    // One thread per device with work, the last on the caller's: devices upload, compute and
    // read back at once, none waiting for another's copies.
    std::vector<std::thread> threads;
    std::size_t last = count;
    for (std::size_t i = 0; i < count; ++i)
      if (!assigned[i].empty()) last = i;
    for (std::size_t i = 0; i < count; ++i)
      if (!assigned[i].empty() && i != last) threads.emplace_back(run_device, i);
    if (last < count) run_device(last);
    for (std::thread& t : threads) t.join();
    pending.clear();
    for (std::size_t i = 0; i < count; ++i) {
      if (out[i].other) {
        record();
        std::rethrow_exception(out[i].other);
      }
      if (out[i].failure.empty()) continue;
      dead[i] = true;
      rec.failures.push_back(out[i].failure);
      std::uint32_t left = 0;
      for (const Range& r : out[i].left) left += r.second - r.first;
      rec.rerun += left;
      pending.insert(pending.end(), out[i].left.begin(), out[i].left.end());
      log(LogLevel::warn, task.who + ": " + out[i].failure + " — its " + std::to_string(left) +
                              " remaining item(s) run on the set's other devices.");
      if (task.failed) task.failed(i, out[i].failure);
    }
  }
  record();
}

}  // namespace vgpu::detail
