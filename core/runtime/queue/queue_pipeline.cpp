// SPDX-License-Identifier: Apache-2.0
// core/runtime/queue/queue_pipeline.cpp — QueuePipeline: one compiled queue kernel with its buffers,
// binding set and batch, made once and reused; each run is one round trip per buffer-sized
// chunk of the queue (one for every queue that fits), with the fewest launches.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "device_core.hpp"
#include "queue_layout.hpp"
#include "loss_policy.hpp"
#include "vgpu/error.hpp"
#include "vgpu/persistent_queue.hpp"

namespace vgpu {

namespace {

using std::to_string;

// Smallest buffer the pipeline allocates, so that small queues do not grow it step by step.
constexpr std::uint64_t kMinCapacityBytes = 4096;

std::string describe_bindings(const Kernel& k) {
  std::string s;
  for (const BindingDecl& b : k.bindings())
    s += (s.empty() ? "" : ", ") + ("slot " + to_string(b.slot) + " " + std::string(to_string(b.access)));
  return s.empty() ? "no bindings" : "bindings " + s;
}

// Throws invalid_argument unless k has the queue ABI's interface (persistent_queue.hpp).
void check_abi(const Kernel& k) {
  const auto& b = k.bindings();
  auto slot = [&](std::uint32_t s) -> const BindingDecl* {
    for (const BindingDecl& d : b)
      if (d.slot == s) return &d;
    return nullptr;
  };
  const BindingDecl* in = slot(0);
  const BindingDecl* out = slot(1);
  const auto wg = k.workgroup_size();
  const bool ok = b.size() == 2 && in && out && in->access == Access::read && out->access == Access::read_write &&
                  k.params_size() == sizeof(QueueLaunch) && wg[1] == 1 && wg[2] == 1;
  if (!ok)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + k.name() + "' does not follow the queue ABI: it has " + describe_bindings(k) +
             ", a params block of " + to_string(k.params_size()) + " bytes and local size " + to_string(wg[0]) + "x" +
             to_string(wg[1]) + "x" + to_string(wg[2]) +
             "; a queue kernel has exactly slot 0 read (`in`: entries and payloads), slot 1 read_write "
             "(`out`: results and output areas), an 8-byte params block {item_base, item_count} and a 1-D "
             "local size.",
         "declare the kernel that way (KernelSource::bindings = vgpu::queue_bindings(), params_size = 8); "
         "docs/queue.md describes the ABI with an example kernel.");
}

}  // namespace

struct QueuePipeline::Resources {
  detail::QueueLimits limits;
  std::uint32_t local_x = 1;
  Buffer in, out;  // grown geometrically; the binding set follows them
  std::uint64_t in_bytes = 0, out_bytes = 0;
  std::uint64_t buffer_limit = 0;  // the most bytes one buffer may get
  BindingSet bindings;
  Batch batch;
  std::vector<QueueLaunch> recorded;                      // the launches batch holds
  std::vector<std::uint32_t> recorded_lanes;              // and their lanes
  std::vector<std::uint32_t> in_words, zeros, out_words;  // host staging, reused
};

QueuePipeline::QueuePipeline(Device device, KernelSource kernel, QueueConfig config)
    : device_(std::move(device)), source_(std::move(kernel)), config_(std::move(config)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "QueuePipeline needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  kernel_ = device_.compile(source_, config_.options);
  check_abi(kernel_);
  const DeviceLimits& lim = device_.info().limits;
  auto r = std::make_unique<Resources>();
  r->local_x = std::max<std::uint32_t>(kernel_.workgroup_size()[0], 1);
  std::uint64_t per_launch = std::uint64_t{std::max<std::uint32_t>(lim.max_workgroup_count[0], 1)} * r->local_x;
  if (config_.max_items_per_launch != 0) per_launch = std::min<std::uint64_t>(per_launch, config_.max_items_per_launch);
  r->limits.max_items_per_launch = std::min<std::uint64_t>(per_launch, PersistentQueue::kMaxItems);
  r->limits.max_buffer_bytes = lim.max_buffer_bytes;
  r->limits.output_bytes = config_.output_bytes;
  // An unguarded kernel's extra invocations of the last workgroup land in these entries.
  r->limits.guard_entries = std::min<std::uint32_t>(r->local_x, 4096);
  // Lanes (docs/queue.md): on a device that cuts loops short, no lane gets more than a quarter
  // of its loop limit in words, leaving room for a kernel's other loops and a few per word.
  r->limits.lanes = config_.lanes;
  r->limits.lane_words = device_.info().limits.max_loop_iterations / 4;
  r->limits.max_lanes = std::max<std::uint32_t>(lim.max_workgroup_count[1], 1);
  r->buffer_limit = 4ull * 0xFFFFFFFFull;
  if (lim.max_buffer_bytes != 0) r->buffer_limit = std::min(r->buffer_limit, lim.max_buffer_bytes);
  r->batch = device_.create_batch();
  resources_ = std::move(r);
}

QueuePipeline::~QueuePipeline() = default;

std::uint64_t QueuePipeline::runs() const {
  std::lock_guard lock(mutex_);
  return runs_;
}

QueueReport QueuePipeline::run(const PersistentQueue& queue) { return run(queue, 0, queue.size()); }

QueueReport QueuePipeline::run(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count) {
  return run_into(queue, first, count, Sink{});
}

QueueReport QueuePipeline::run_into(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count,
                                    const Sink& sink) {
  // Before the pipeline's own lock: a CPU queue kernel running this pipeline again would wait
  // for that lock forever instead of being refused by its device.
  detail::DeviceAccess::core(device_).check_not_inside();
  std::lock_guard lock(mutex_);
  first = std::min<std::uint64_t>(first, queue.size());
  count = std::min<std::uint64_t>(count, queue.size() - first);
  if (count == 0) {
    ++runs_;
    return {};
  }
  const Sink* into = sink.dest != nullptr || sink.results != nullptr ? &sink : nullptr;
  // Every input is on the host: the device recovers itself at the next call, so run once more.
  QueueReport report = detail::retry_once_after_loss([&] { return run_once(queue, first, count, into); });
  ++runs_;
  return report;
}

QueueReport QueuePipeline::run_once(const PersistentQueue& queue, std::uint64_t first, std::uint64_t count,
                                    const Sink* sink) {
  Resources& r = *resources_;
  const std::string& dev_id = device_.info().id();
  const std::vector<detail::QueueChunk> chunks = detail::plan_queue(queue, r.limits, dev_id, first, count);
  std::uint64_t need_in = 0, need_out = 0;
  for (const auto& c : chunks) {
    need_in = std::max(need_in, c.in_words * 4);
    need_out = std::max(need_out, c.out_words * 4);
  }
  auto no_host_memory = [&] {
    fail(ErrorCategory::out_of_memory,
         "no host memory to stage a queue of " + to_string(queue.size()) + " items (" +
             to_string(queue.payload_bytes()) + " payload bytes) for kernel '" + kernel_.name() + "'.",
         "split the queue into smaller ones and run them one after another.");
  };

  // Grow both buffers before touching the pipeline's state, so a failure leaves it as it was.
  if (need_in > r.in_bytes || need_out > r.out_bytes) {
    // Doubling from the current size (kMinCapacityBytes at first) until it holds need: a queue
    // that keeps growing reallocates O(log n) times. Never past the device's buffer limit.
    auto grown = [&](std::uint64_t have, std::uint64_t need) {
      if (need <= have) return have;
      std::uint64_t cap = std::max(have, kMinCapacityBytes);
      while (cap < need) cap *= 2;
      return std::min(cap, std::max(r.buffer_limit, need));
    };
    const std::uint64_t in_cap = grown(r.in_bytes, need_in), out_cap = grown(r.out_bytes, need_out);
    Buffer in = r.in, out = r.out;
    try {
      // vgpu-owned buffers: every run rewrites `in` and the result table, so a recovery that
      // reallocates them never marks their contents lost.
      if (in_cap != r.in_bytes) in = detail::DeviceAccess::internal_buffer(device_, in_cap);
      if (out_cap != r.out_bytes) out = detail::DeviceAccess::internal_buffer(device_, out_cap);
    } catch (const Error& e) {
      if (e.category() != ErrorCategory::out_of_memory) throw;
      fail(ErrorCategory::out_of_memory,
           "the queue of " + to_string(queue.size()) + " items needs " + to_string(need_in) + " + " +
               to_string(need_out) + " bytes of buffers for kernel '" + kernel_.name() + "', which " + dev_id +
               " could not allocate (" + e.problem() + ")",
           "split the queue into smaller ones and run them one after another.");
    }
    BindingSet bindings = device_.bind(kernel_, {{0, in}, {1, out}});
    r.in = std::move(in);
    r.out = std::move(out);
    r.in_bytes = in_cap;
    r.out_bytes = out_cap;
    buffer_bytes_.store(in_cap + out_cap, std::memory_order_relaxed);
    r.bindings = std::move(bindings);
    r.recorded.clear();  // the batch refers to the old binding set
    r.recorded_lanes.clear();
    r.batch.clear();
  }

  QueueReport report;
  // Each result's start and length in storage; spans are set at the end, once storage stops moving.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> where;
  try {
    if (!sink) {
      report.results.resize(count);
      where.resize(count);
    }
  } catch (const std::bad_alloc&) {
    no_host_memory();
  }
  std::uint64_t sink_at = 0;  // with a sink: the capacities of the range's items so far
  const std::uint64_t guard = 2ull * r.limits.guard_entries;
  for (const detail::QueueChunk& c : chunks) {
    const std::uint64_t table = 2 * c.count + guard;
    try {
      detail::pack_queue_chunk(queue, c, r.limits, r.in_words);
      if (r.zeros.size() < table) r.zeros.resize(std::max<std::uint64_t>(table, r.zeros.size() * 2), 0);
      r.out_words.resize(c.out_words);
    } catch (const std::bad_alloc&) {
      no_host_memory();
    }
    if (r.recorded.size() != c.launches.size() || r.recorded_lanes != c.lanes ||
        !std::equal(c.launches.begin(), c.launches.end(), r.recorded.begin(), [](const auto& a, const auto& b) {
          return a.item_base == b.item_base && a.item_count == b.item_count;
        })) {
      r.batch.clear();
      r.recorded.clear();
      r.recorded_lanes.clear();
      for (std::size_t l = 0; l < c.launches.size(); ++l)
        r.batch.dispatch(
            kernel_, r.bindings, ParamsBlock::of(c.launches[l]),
            Groups{static_cast<std::uint32_t>((std::uint64_t{c.launches[l].item_count} + r.local_x - 1) / r.local_x),
                   c.lanes[l], 1});
      r.recorded = c.launches;
      r.recorded_lanes = c.lanes;
    }
    const HostWrite writes[] = {{r.in, r.in_words.data(), c.in_words * 4, 0}, {r.out, r.zeros.data(), table * 4, 0}};
    const HostRead reads[] = {{r.out, r.out_words.data(), c.out_words * 4, 0}};
    if (config_.timeout.count() > 0)
      device_.round_trip(writes, r.batch, reads, config_.timeout);
    else
      device_.round_trip(writes, r.batch, reads);
    report.kernel_launches += c.launches.size();
    report.round_trips += 1;

    // Check that the kernel kept the ABI before any result is believed.
    const std::uint32_t* res = r.out_words.data();
    for (std::uint64_t g = 2 * c.count; g < table; ++g)
      if (res[g] != 0)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_.name() + "' wrote results past the last of the " + to_string(c.count) +
                 " items of its launch (result entry " + to_string(g / 2) +
                 "): its output count differs from the item count.",
             "return at once in invocations with global id x >= item_count, and write only item item_base + x's "
             "result (docs/queue.md).");
    std::uint64_t emitted = 0;
    for (std::uint64_t j = 0; j < c.count; ++j) emitted += res[2 * j + 1];
    const std::uint32_t lanes = *std::max_element(c.lanes.begin(), c.lanes.end());
    // A kernel that ignores lanes emits once per lane: say why there were several.
    const std::string lanes_note =
        lanes < 2 ? std::string()
                  : " The launch gave each item " + to_string(lanes) + " lanes (workgroups along y)" +
                        (config_.lanes != 0 ? " as QueueConfig::lanes asks"
                                            : ", since " + dev_id + " stops a shader's loops after " +
                                                  to_string(device_.info().limits.max_loop_iterations) +
                                                  " iterations and the items are long") +
                        "; only lane 0 may emit.";
    const std::string lanes_fix =
        lanes < 2 ? std::string()
                  : " Split each item's work over its lanes (gl_WorkGroupID.y of gl_NumWorkGroups.y) and emit "
                    "from lane 0 only (docs/queue.md, Lanes), or set QueueConfig::lanes = 1 for a kernel whose work "
                    "per item does not grow with its payload.";
    for (std::uint64_t j = 0; j < c.count; ++j) {
      const std::size_t i = static_cast<std::size_t>(c.first + j);
      const std::uint32_t bytes = res[2 * j], emits = res[2 * j + 1];
      const std::string item = "item id " + to_string(queue.id(i)) + " (position " + to_string(i) + ")";
      if (emits != 1)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_.name() + "' emitted " + to_string(emitted) + " outputs for " + to_string(c.count) +
                 " items: " + item + (emits == 0 ? " got no output." : " got " + to_string(emits) + " outputs.") +
                 lanes_note,
             "write exactly one output per item and add 1 to its emits word once (atomicAdd; docs/queue.md)." +
                 lanes_fix);
      const std::uint32_t cap = detail::queue_out_capacity(queue, i, r.limits);
      if (bytes > cap)
        fail(ErrorCategory::invalid_argument,
             "kernel '" + kernel_.name() + "' reported " + to_string(bytes) + " output bytes for " + item +
                 ", more than its capacity of " + to_string(cap) + ".",
             "write at most out_capacity bytes per item; raise QueueConfig::output_bytes for larger outputs.");
    }
    // Every item is right: copy the outputs out.
    const std::uint32_t* entries = r.in_words.data();
    for (std::uint64_t j = 0; j < c.count; ++j) {
      const std::size_t i = static_cast<std::size_t>(c.first + j);
      const std::uint32_t bytes = res[2 * j];
      const auto* src = reinterpret_cast<const std::byte*>(res + entries[4 * j + 2]);
      if (sink) {
        std::byte* to = sink->dest + sink_at;
        if (bytes > 0) std::memcpy(to, src, bytes);
        sink->results[i - first] = QueueResult{queue.id(i), std::span<const std::byte>(to, bytes)};
        sink_at += detail::queue_out_capacity(queue, i, r.limits);
        continue;
      }
      where[i - first] = {report.storage.size(), bytes};
      try {
        report.storage.insert(report.storage.end(), src, src + bytes);
      } catch (const std::bad_alloc&) {
        no_host_memory();
      }
      report.results[i - first].id = queue.id(i);
    }
  }
  for (std::size_t i = 0; i < report.results.size(); ++i)
    report.results[i].payload = std::span<const std::byte>(report.storage.data() + where[i].first, where[i].second);
  return report;
}

}  // namespace vgpu
