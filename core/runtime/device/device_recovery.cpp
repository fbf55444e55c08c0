// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/device_recovery.cpp — in-place recovery of a lost device: reopen the backend device,
// rebuild every live object on it, then move the objects' states over (DeviceCore::recover).
#include <string>
#include <unordered_map>
#include <vector>

#include "device_core.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::detail {
namespace {

std::string trimmed(std::string why) {
  while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
  return why.empty() ? std::string("no reason given") : why;
}

std::string device_label(const DeviceInfo& info) {
  return std::string(vgpu::to_string(info.backend)) + " device '" + info.name + "'";
}

}  // namespace

// The fresh device's objects, each beside the state it replaces the object of. Built before
// anything changes, so that a failure leaves every state on the old device (still lost).
struct DeviceCore::Rebuilt {
  std::vector<std::pair<std::shared_ptr<BufferState>, std::unique_ptr<BufferImpl>>> buffers;
  std::vector<std::pair<std::shared_ptr<KernelState>, std::unique_ptr<KernelImpl>>> kernels;
  std::vector<std::pair<std::shared_ptr<BindingSetState>, std::unique_ptr<BindingSetImpl>>> binding_sets;
  std::vector<std::shared_ptr<BatchState>> batches;
};

namespace {

template <class State>
std::vector<std::shared_ptr<State>> live(std::vector<std::weak_ptr<State>>& list) {
  std::vector<std::shared_ptr<State>> out;
  out.reserve(list.size());
  std::erase_if(list, [](const std::weak_ptr<State>& w) { return w.expired(); });
  for (const auto& w : list)
    if (auto s = w.lock()) out.push_back(std::move(s));
  return out;
}

}  // namespace

void DeviceCore::rebuild(DeviceImpl& fresh, Rebuilt& out) {
  std::vector<std::shared_ptr<BufferState>> buffers;
  std::vector<std::shared_ptr<KernelState>> kernels;
  std::vector<std::shared_ptr<BindingSetState>> binding_sets;
  {
    std::lock_guard lock(registry_mutex_);
    buffers = live(buffers_);
    kernels = live(kernels_);
    binding_sets = live(binding_sets_);
    out.batches = live(batches_);
  }
  std::unordered_map<const BufferState*, BufferImpl*> new_buffer;
  std::unordered_map<const KernelState*, KernelImpl*> new_kernel;
  for (auto& b : buffers) {
    // Memory used in place outlives the device: the fresh one uses it in place again.
    auto impl = !b->imported         ? fresh.create_buffer(b->size)
                : b->imported_device ? fresh.import_device(b->imported, b->size)
                                     : fresh.import_host(b->imported, b->size);
    if (!impl)
      fail(ErrorCategory::device_lost, "the reopened device no longer reaches memory an array used in place.",
           "make the array again from its owner's data (Array::from_host copies) after the recovery.");
    if (!b->imported) counters_->allocations.fetch_add(1, std::memory_order_relaxed);
    if (!b->label.empty()) fresh.set_label(*impl, b->label);
    new_buffer[b.get()] = impl.get();
    out.buffers.emplace_back(std::move(b), std::move(impl));
  }
  for (auto& k : kernels) {
    // Compiled as the first time (the source before reflection), so the backend finds the same
    // L2 entry: the fresh device counts an l2_hit, not a source compile, where L2 holds it.
    const DialectSource* code = k->compiled.pick(info().dialects);
    if (!code)
      fail(ErrorCategory::not_supported, "kernel '" + k->source.name + "' has no source the reopened device accepts.",
           "open the device again with the same driver.");
    auto impl = fresh.compile(k->compiled, *code, k->options);
    counters_->compiles.fetch_add(1, std::memory_order_relaxed);
    new_kernel[k.get()] = impl.get();
    out.kernels.emplace_back(std::move(k), std::move(impl));
  }
  for (auto& bs : binding_sets) {
    const auto kernel = new_kernel.find(bs->kernel.get());
    if (kernel == new_kernel.end())
      fail(ErrorCategory::internal, "a binding set's kernel was not rebuilt.", "report this as a vgpu bug.");
    std::vector<BufferImpl*> raw(bs->by_slot.size(), nullptr);
    for (const BindingDecl& d : bs->kernel->source.bindings) {
      const auto buffer = new_buffer.find(bs->by_slot.at(d.slot).get());
      if (buffer == new_buffer.end())
        fail(ErrorCategory::internal, "a binding set's buffer was not rebuilt.", "report this as a vgpu bug.");
      raw[d.slot] = buffer->second;
    }
    auto impl = fresh.bind(*kernel->second, raw);
    counters_->binds.fetch_add(1, std::memory_order_relaxed);
    out.binding_sets.emplace_back(std::move(bs), std::move(impl));
  }
}

void DeviceCore::recover() {
  std::shared_ptr<DeviceHost> old;  // let go after the recovery lock: closing it may wait for its work
  Rebuilt rebuilt;                  // likewise: a state whose last handle went meanwhile dies here
  std::unique_lock lock(recovery_mutex_);
  if (!impl().lost()) return;  // another thread recovered it while this one waited
  const std::string why = trimmed(impl().lost_reason());
  const std::string lost = device_label(info()) + " (" + info().id() + ") is lost (" + why + ")";
  if (!reopen_)
    fail(ErrorCategory::device_lost, lost + " and cannot be opened again: it was not opened by a Runtime.",
         "open the device with Runtime::open() so that vgpu can recreate it after a loss.");
  std::unique_ptr<DeviceImpl> fresh;
  try {
    fresh = reopen_();
  } catch (const Error& e) {
    // The backend's own Fix wins where it has one: it knows what its driver allows (CUDA after a
    // real kernel fault: only a new process).
    fail(ErrorCategory::device_lost, lost + ", and opening it again failed: " + e.problem(),
         !e.fix().empty() && e.category() == ErrorCategory::unavailable
             ? trimmed(e.fix()) + "; the next call on this Device tries again."
             : "check the device and its driver (vgpu-probe says what works); the next call on this Device tries "
               "again, or use another device (a KernelDatabase or Cache falls back by itself).");
  } catch (const std::exception& e) {
    fail(ErrorCategory::device_lost, lost + ", and opening it again failed: " + e.what(),
         "check the device and its driver (vgpu-probe says what works); the next call on this Device tries again, "
         "or use another device.");
  }
  fresh->set_timeout(timeout());
  const std::shared_ptr<DeviceHost> host = make_device_host(std::move(fresh), counters_, times_);
  {
    // Handles dropped on other threads meanwhile queue their objects for this thread.
    const CallLock call = host->lock();
    try {
      rebuild(host->impl(), rebuilt);
    } catch (const Error& e) {
      rebuilt = Rebuilt{};  // the fresh device's objects go before it does
      fail(ErrorCategory::device_lost,
           lost + "; it was opened again, but rebuilding its objects failed: " + e.problem(),
           "the next call on this Device tries again; free memory or use another device if it keeps failing.");
    } catch (const std::bad_alloc&) {
      rebuilt = Rebuilt{};
      fail(ErrorCategory::device_lost, lost + "; it was opened again, but host memory ran out rebuilding its objects.",
           "free memory; the next call on this Device tries again.");
    }
    // Nothing below throws: every state moves to the fresh device, its old object to the old host.
    std::size_t lost_buffers = 0;
    for (auto& [b, impl] : rebuilt.buffers) {
      const std::uint64_t counted = b->imported ? 0 : b->size;  // imported memory is not allocated
      retire(b->device, std::move(b->impl), counted);
      // Counted here, not when rebuild() made it: a failed rebuild frees what it made uncounted.
      counters_->allocated_bytes.fetch_add(counted, std::memory_order_relaxed);
      b->impl = std::move(impl);
      b->device = host;
      if (b->internal || b->imported) {
        b->lost = LostContents{};
      } else {
        b->lost.lose_all(b->size);
        ++lost_buffers;
      }
    }
    for (auto& [k, impl] : rebuilt.kernels) {
      retire(k->device, std::move(k->impl));
      k->impl = std::move(impl);
      k->device = host;
    }
    for (auto& [bs, impl] : rebuilt.binding_sets) {
      retire(bs->device, std::move(bs->impl));
      bs->impl = std::move(impl);
      bs->device = host;
    }
    for (auto& batch : rebuilt.batches) {
      std::lock_guard batch_lock(batch->mutex);
      retire(batch->device, std::move(batch->recorded));  // recorded again at its next submit
      batch->device = host;
    }
    lost_buffers_ = lost_buffers;
    loss_reason_ = why;
  }
  old = std::exchange(host_, host);
  current_impl_.store(&host_->impl(), std::memory_order_release);
  // A loss soon after the last recovery is a relapse: KernelDatabase demotes the device then.
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t seen = loss_seen_ns_.exchange(0, std::memory_order_relaxed);
  const std::chrono::steady_clock::time_point loss_at =
      seen ? std::chrono::steady_clock::time_point(std::chrono::nanoseconds(seen)) : now;
  if (counters_->recoveries.load(std::memory_order_relaxed) > 0 && loss_at - last_recovery_ < kRelapseWindow)
    relapses_.fetch_add(1, std::memory_order_relaxed);
  last_recovery_ = now;
  counters_->recoveries.fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::info, info().id() + " was lost (" + why + "); recreated it with " +
                          std::to_string(rebuilt.buffers.size()) + " buffers, " +
                          std::to_string(rebuilt.kernels.size()) + " kernels, " +
                          std::to_string(rebuilt.binding_sets.size()) + " binding sets and " +
                          std::to_string(rebuilt.batches.size()) + " batches.");
}

}  // namespace vgpu::detail
