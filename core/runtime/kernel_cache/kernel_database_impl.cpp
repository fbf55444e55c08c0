// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/kernel_database_impl.cpp — persistent kernels by (id, shape, device): a hit is one hash
// and one map lookup; plans are built, hashed and compiled only on a miss, outside the lock.
#include "kernel_database_impl.hpp"

#include <xxhash.h>

#include <optional>
#include <string>
#include <utility>

#include "builtin_plans.hpp"
#include "device_core.hpp"
#include "loss_policy.hpp"
#include "plan_hash.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu::detail {
namespace {

// Seeds keeping the three key families apart (a key is also checked against the entry).
constexpr std::uint64_t kSlotSeed = 0x76677075'736c6f74ull;   // (id, shape): selection
constexpr std::uint64_t kFixedSeed = 0x76677075'66697864ull;  // (id, shape, device): fixed plans

// Choices of a device per (id, shape) kept per live kernel allowed: a choice holds no device
// memory, and one dropped is asked of the runtime again (cheap: it keeps its size class's choice).
constexpr std::size_t kChosenPerKernel = 4;

// The bounds of the device choices, given those of the kernels.
PersistentLimits chosen_limits(const PersistentLimits& limits) { return {limits.count * kChosenPerKernel, UINT64_MAX}; }

// Throws invalid_argument (with a Fix) for bounds out of range.
void check_limits(const PersistentLimits& l) {
  if (l.count < 1 || l.count > PersistentLimits::kMaxCount || l.bytes == 0)
    fail(ErrorCategory::invalid_argument,
         "KernelDatabase::set_limits got count " + std::to_string(l.count) + " and bytes " + std::to_string(l.bytes) +
             "; a database keeps 1 to " + std::to_string(PersistentLimits::kMaxCount) +
             " kernels and a positive number of bytes.",
         "pass a count from 1 to 1048576 and bytes > 0 (the defaults: PersistentLimits{}).");
}

// Hashes id and shape (no allocation: this is the hot path's key).
std::uint64_t key_of(std::string_view id, const Shape& shape, std::uint64_t seed) {
  const std::uint64_t h = XXH3_64bits_withSeed(id.data(), id.size(), seed);
  return XXH3_64bits_withSeed(shape.data(), shape.size() * sizeof(std::uint64_t), h);
}

// What makes two devices the same for a kernel: id and fingerprint, as in plan_key.
std::uint64_t device_key_of(const Device& device) {
  const std::string s = device.info().id() + "#" + device.info().fingerprint.hex();
  return XXH3_64bits(s.data(), s.size());
}

}  // namespace

KernelDatabaseImpl::FreeDropped::~FreeDropped() {
  if (!db.has_dropped_.load(std::memory_order_acquire)) return;
  std::vector<std::shared_ptr<const void>> dropped;
  {
    std::lock_guard lock(db.mutex_);
    dropped.swap(db.dropped_);
    db.has_dropped_.store(false, std::memory_order_release);
  }
  // dropped goes here, without the lock
}

void KernelDatabaseImpl::drop_locked(std::shared_ptr<const void> held) const {
  if (!held) return;
  dropped_.push_back(std::move(held));
  has_dropped_.store(true, std::memory_order_release);
}

void KernelDatabaseImpl::drop_locked(Device device) const {
  if (device) drop_locked(std::make_shared<const Device>(std::move(device)));
}

void KernelDatabaseImpl::drop_locked(PlanFactory factory) const {
  if (factory) drop_locked(std::make_shared<const PlanFactory>(std::move(factory)));
}

template <class Pred>
void KernelDatabaseImpl::erase_kernels_locked(Pred pred) {
  for (Entry& e : kernels_.erase_if([&](std::uint64_t, const Entry& e) { return pred(e); }))
    drop_locked(std::move(e.kernel));
}

void KernelDatabaseImpl::drop_evicted_locked(std::vector<Entry> evicted) {
  for (Entry& e : evicted) {
    detail::DeviceAccess::core(e.kernel->device())
        .counters()
        .persistent_evictions.fetch_add(1, std::memory_order_relaxed);
    drop_locked(std::move(e.kernel));  // freed once the lock is released, or later by its last user
  }
}

KernelDatabaseImpl::KernelDatabaseImpl(Device device) : device_(std::move(device)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "KernelDatabase needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  device_key_ = device_key_of(device_);
  // The bounds of the runtime that opened the device (its RuntimeOptions, else the environment).
  const PersistentLimits limits = detail::DeviceAccess::core(device_).persistent_limits();
  kernels_.set_limits(limits);
  chosen_.set_limits(chosen_limits(limits));
  register_builtins();
}

KernelDatabaseImpl::KernelDatabaseImpl(Runtime& runtime) : runtime_(&runtime) {
  const PersistentLimits limits = runtime.config().persistent_limits();
  kernels_.set_limits(limits);
  chosen_.set_limits(chosen_limits(limits));
  register_builtins();
}

KernelDatabaseImpl::KernelDatabaseImpl() : KernelDatabaseImpl(Runtime::global()) {}

void KernelDatabaseImpl::register_builtins() {
  // A built-in plan is a function of (device, shape) only (its variant is measured once per
  // device and size class), so it is looked up by key.
  for (const std::string& op : ops::names())
    factories_[op] = Factory{builtin_plan_factory(op), PlanStability::fixed, ++generation_};
}

Device KernelDatabaseImpl::device() const {
  std::lock_guard lock(mutex_);
  return device_;
}

void KernelDatabaseImpl::call(const std::string& id, const Shape& shape, std::span<const TensorArg> args) {
  // The failed device's kernels for id go, so the next get() selects (and builds) elsewhere.
  auto drop_device = [&](const Device& used) {
    FreeDropped free_dropped{*this};
    std::lock_guard lock(mutex_);
    erase_kernels_locked([&](const Entry& e) { return e.id == id && e.kernel && e.kernel->device() == used; });
  };
  for (;;) {
    std::shared_ptr<PersistentKernel> kernel;
    Device building;  // set by lookup() only when it selects or builds
    try {
      kernel = lookup(id, shape, &building);
      // The loss policy (loss_policy.hpp): a lost device recovers in place and the kernel
      // retries once by itself, so a loss here costs no demotion, unless it is a relapse.
      const detail::RelapseWatch watch(detail::DeviceAccess::core(kernel->device()));
      (*kernel)(args);
      if (runtime_ && watch.relapsed() &&
          runtime_->demote(id, shape, kernel->device(),
                           kernel->device().info().id() + " was lost again within " +
                               std::to_string(detail::DeviceCore::kRelapseWindow.count()) +
                               " s of recovering from a loss"))
        drop_device(kernel->device());  // this call's results are right; the next ones run elsewhere
      return;
    } catch (const Error& e) {
      // The device gives way (loss_policy.hpp, step 3), or the error is the caller's: a
      // timeout is the caller's limit (running the call again elsewhere would take longer
      // still). device_lost here means the kernel's retry failed too.
      if (!runtime_ || !detail::gives_way(e)) throw;
      Device used = kernel ? kernel->device() : building;
      if (!used) used = device();  // selection itself failed
      if (!used || !runtime_->demote(id, shape, used, e.what())) throw;
      drop_device(used);
    }
  }
}

void KernelDatabaseImpl::add(const std::string& id, PlanFactory factory, PlanStability stability) {
  if (id.empty() || !factory)
    fail(ErrorCategory::invalid_argument, "KernelDatabase::add needs a non-empty id and a factory.",
         "pass an id such as \"my_kernel\" and a function (DeviceInfo, Shape) -> KernelPlan.");
  FreeDropped free_dropped{*this};
  std::lock_guard lock(mutex_);
  // A new generation: a build of the old factory still in flight is returned to its caller
  // but not kept.
  Factory& f = factories_[id];
  drop_locked(std::move(f.make));
  f = Factory{std::move(factory), stability, ++generation_};
  erase_kernels_locked([&](const Entry& e) { return e.id == id; });
  for (Chosen& c : chosen_.erase_if([&](std::uint64_t, const Chosen& c) { return c.id == id; }))
    drop_locked(std::move(c.device));
}

const KernelDatabaseImpl::Factory& KernelDatabaseImpl::factory_locked(const std::string& id) const {
  auto f = factories_.find(id);
  if (f == factories_.end()) {
    std::string known;
    for (const auto& [name, _] : factories_) known += (known.empty() ? "" : ", ") + name;
    fail(ErrorCategory::invalid_argument, "no kernel '" + id + "' is registered in this KernelDatabase.",
         "register it with add(), or use one of: " + known + ".");
  }
  return f->second;
}

template <class Flights>
auto KernelDatabaseImpl::join_locked(std::unique_lock<std::mutex>& lock, Flights& flights, std::uint64_t key,
                                     const std::string& id, const Shape& shape) {
  if (flights.state(key) == FlightState::running_here)
    fail(ErrorCategory::invalid_argument,
         "kernel '" + id + "' at shape " + to_string(shape) +
             " was asked for while this thread is building it (its factory, or the selection running it, "
             "called back into the KernelDatabase for the same id and shape).",
         "build the plan without asking the database for the kernel being built; other ids and shapes are fine.");
  return flights.wait(lock, key);
}

std::shared_ptr<PersistentKernel> KernelDatabaseImpl::build_locked(std::unique_lock<std::mutex>& lock,
                                                                   std::uint64_t key, const std::string& id,
                                                                   const Shape& shape, const Device& device,
                                                                   std::uint64_t device_key, const Factory& f,
                                                                   std::unique_ptr<KernelPlan> plan) {
  PlanFactory make;
  if (!plan) make = f.make;  // f may be replaced once the lock is released
  const std::uint64_t generation = f.generation;
  return flights_.run(
      lock, key,
      [&] {
        if (!plan) plan = std::make_unique<KernelPlan>(plan_on(make, device, shape));
        return std::make_shared<PersistentKernel>(device, std::move(*plan));
      },
      [&](std::shared_ptr<PersistentKernel>* kernel, const std::exception_ptr&) {
        if (!kernel) return;
        ++misses_;
        auto cur = factories_.find(id);
        if (cur != factories_.end() && cur->second.generation == generation) {
          if (auto old = kernels_.take(key)) drop_locked(std::move(old->kernel));
          // The new kernel is the most recently used: the bounds evict others, never it.
          drop_evicted_locked(kernels_.put(key, Entry{id, shape, device_key, *kernel}, (*kernel)->buffer_bytes()));
        }
      });
}

std::shared_ptr<PersistentKernel> KernelDatabaseImpl::get(const std::string& id, const Shape& shape) {
  return lookup(id, shape, nullptr);
}

std::shared_ptr<PersistentKernel> KernelDatabaseImpl::lookup(const std::string& id, const Shape& shape, Device* used) {
  const std::uint64_t slot = runtime_ ? key_of(id, shape, kSlotSeed) : 0;
  FreeDropped free_dropped{*this};
  std::unique_lock lock(mutex_);
  for (;;) {
    // 1. The device: fixed, or the one selected for (id, shape) while the selection epoch
    //    holds (a lost device is used again: its next call recovers it in place).
    std::uint64_t device_key = device_key_;
    if (runtime_) {
      const std::uint64_t epoch = runtime_->selection_epoch();
      const Chosen* c = chosen_.find(slot);
      if (c == nullptr || c->epoch != epoch || c->id != id || c->shape != shape || !c->device) {
        select_locked(lock, slot, id, shape, epoch, used);
        continue;
      }
      if (!(device_ == c->device)) drop_locked(std::exchange(device_, c->device));
      device_key = c->device_key;
      if (c->interim) ++interim_calls_;
    }

    // 2. A fixed factory's kernel is found by key, without asking the factory.
    const std::uint64_t key = key_of(id, shape, kFixedSeed ^ device_key);
    if (const Entry* found = kernels_.find(key)) {
      const Entry& e = *found;
      if (e.device_key == device_key && e.id == id && e.shape == shape) {
        ++hits_;  // on a device lost since too: the kernel's next call recovers the device in place
        return e.kernel;
      }
    }
    const Factory& f = factory_locked(id);
    const Device device = device_;  // a copy: the lock is released below
    if (used) *used = device;
    if (f.stability == PlanStability::fixed) {
      if (flights_.state(key) != FlightState::none) {
        auto kernel = join_locked(lock, flights_, key, id, shape);
        ++hits_;
        return kernel;
      }
      return build_locked(lock, key, id, shape, device, device_key, f, nullptr);
    }

    // 3. A varying factory is asked every time (outside the lock); its kernel is found by
    //    the plan's content.
    const PlanFactory make = f.make;
    const std::uint64_t generation = f.generation;
    lock.unlock();
    auto plan = std::make_unique<KernelPlan>(plan_on(make, device, shape));
    const std::uint64_t content =
        detail::plan_content_hash(id + "@" + device.info().id() + "#" + device.info().fingerprint.hex(), shape, *plan);
    lock.lock();
    if (const Entry* found = kernels_.find(content)) {
      ++hits_;
      return found->kernel;
    }
    if (flights_.state(content) != FlightState::none) {
      auto kernel = join_locked(lock, flights_, content, id, shape);
      ++hits_;
      return kernel;
    }
    auto cur = factories_.find(id);
    if (cur == factories_.end() || cur->second.generation != generation) continue;  // replaced meanwhile
    return build_locked(lock, content, id, shape, device, device_key, cur->second, std::move(plan));
  }
}

void KernelDatabaseImpl::select_locked(std::unique_lock<std::mutex>& lock, std::uint64_t slot, const std::string& id,
                                       const Shape& shape, std::uint64_t epoch, Device* used) {
  if (selecting_.state(slot) != FlightState::none) {
    join_locked(lock, selecting_, slot, id, shape);
    return;
  }
  const PlanFactory make = factory_locked(id).make;
  // Calibration runs the factory and times every eligible device: never under the lock.
  Device chosen;
  std::uint64_t device_key = 0;
  bool interim = false;
  selecting_.run(
      lock, slot,
      [&] {
        // choose(), not select(): a first call of a size class runs on the CPU at once while
        // its devices are measured in the background; the epoch moves when they are (lookup()
        // then selects again and switches over).
        const Selection s = runtime_->choose(id, shape, make);
        interim = s.source == SelectionSource::interim;
        chosen = runtime_->open(s.device);
        device_key = device_key_of(chosen);
      },
      [&](std::monostate* done, const std::exception_ptr&) {
        if (!done) return;
        if (std::optional<Chosen> old = chosen_.take(slot)) {
          // The interim device's kernel for (id, shape) is not needed once the choice moved away.
          if (old->interim && old->device_key != device_key) {
            const std::uint64_t old_key = old->device_key;
            erase_kernels_locked(
                [&](const Entry& e) { return e.id == id && e.shape == shape && e.device_key == old_key; });
          }
          drop_locked(std::move(old->device));
        }
        for (Chosen& c : chosen_.put(slot, Chosen{id, shape, chosen, device_key, epoch, interim}, 0))
          drop_locked(std::move(c.device));
        if (used) *used = chosen;
      });
}

std::uint64_t KernelDatabaseImpl::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

std::uint64_t KernelDatabaseImpl::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

std::uint64_t KernelDatabaseImpl::interim_calls() const {
  std::lock_guard lock(mutex_);
  return interim_calls_;
}

std::size_t KernelDatabaseImpl::size() const {
  std::lock_guard lock(mutex_);
  return kernels_.size();
}

std::uint64_t KernelDatabaseImpl::buffer_bytes() const {
  std::lock_guard lock(mutex_);
  return kernels_.bytes();
}

std::uint64_t KernelDatabaseImpl::evictions() const {
  std::lock_guard lock(mutex_);
  return kernels_.evictions();
}

PersistentLimits KernelDatabaseImpl::limits() const {
  std::lock_guard lock(mutex_);
  return kernels_.limits();
}

void KernelDatabaseImpl::set_limits(PersistentLimits limits) {
  check_limits(limits);
  FreeDropped free_dropped{*this};
  std::lock_guard lock(mutex_);
  drop_evicted_locked(kernels_.set_limits(limits));
  for (Chosen& c : chosen_.set_limits(chosen_limits(limits))) drop_locked(std::move(c.device));
}

std::string KernelDatabaseImpl::report() const {
  std::lock_guard lock(mutex_);
  std::string s = "KernelDB: " + std::to_string(hits_) + " hits, " + std::to_string(misses_) + " compiles";
  if (kernels_.evictions() != 0) s += ", " + std::to_string(kernels_.evictions()) + " evictions";
  return s;
}

void KernelDatabaseImpl::evict(const std::string& id) {
  FreeDropped free_dropped{*this};
  std::lock_guard lock(mutex_);
  erase_kernels_locked([&](const Entry& e) { return e.id == id; });
  // A build of id in flight now is returned to its caller but not kept.
  if (auto f = factories_.find(id); f != factories_.end()) f->second.generation = ++generation_;
}

void KernelDatabaseImpl::evict() {
  FreeDropped free_dropped{*this};
  std::lock_guard lock(mutex_);
  erase_kernels_locked([](const Entry&) { return true; });
  for (auto& [_, f] : factories_) f.generation = ++generation_;
}

}  // namespace vgpu::detail
