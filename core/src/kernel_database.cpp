// core/src/kernel_database.cpp — persistent kernels by (id, shape, plan content hash).
#include "vgpu/kernel_database.hpp"

#include <xxhash.h>

#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"

namespace vgpu {
namespace {

// Streams every field that decides what a persistent kernel is into one xxHash3 state:
// source text per dialect, specialisation, tensors (dtype, shape, access) and the binding
// topology, params and groups of every step. Length prefixes keep fields from running together.
class PlanHasher {
 public:
  PlanHasher() { XXH3_64bits_reset(state_); }
  ~PlanHasher() { XXH3_freeState(state_); }
  PlanHasher(const PlanHasher&) = delete;
  PlanHasher& operator=(const PlanHasher&) = delete;

  void bytes(const void* data, std::size_t n) {
    const std::uint64_t len = n;
    XXH3_64bits_update(state_, &len, sizeof len);
    XXH3_64bits_update(state_, data, n);
  }
  void text(std::string_view s) { bytes(s.data(), s.size()); }
  void num(std::uint64_t v) { XXH3_64bits_update(state_, &v, sizeof v); }
  std::uint64_t digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_ = XXH3_createState();
};

std::uint64_t plan_key(const std::string& id, const Shape& shape, const KernelPlan& p) {
  PlanHasher h;
  h.text(id);
  h.num(shape.size());
  for (auto d : shape) h.num(d);
  h.text(p.source.name);
  h.text(p.source.glsl);
  h.text(p.source.cuda);
  h.text(p.source.cuda_entry);
  h.text(p.source.cpu.builtin);
  h.text(p.source.cpu.version);
  h.text(p.source.cpu.fn ? p.source.cpu.fn.target_type().name() : "");
  h.num(p.source.bindings.size());
  for (const auto& b : p.source.bindings) {
    h.num(b.slot);
    h.num(static_cast<std::uint64_t>(b.access));
  }
  h.num(p.source.params_size);
  h.num(p.options.defines.size());
  for (const auto& [k, v] : p.options.defines) {
    h.text(k);
    h.text(v);
  }
  for (auto w : p.options.workgroup_size) h.num(w);
  h.num(p.tensors.size());
  for (const auto& t : p.tensors) {
    h.text(t.name);
    h.num(static_cast<std::uint64_t>(t.dtype));
    h.num(t.shape.size());
    for (auto d : t.shape) h.num(d);
    h.num(static_cast<std::uint64_t>(t.access) * 2 + (t.scratch ? 1 : 0));
  }
  h.num(p.steps.size());
  for (const auto& st : p.steps) {
    h.num(st.slot_tensor.size());
    for (const auto& [slot, tensor] : st.slot_tensor) h.num((std::uint64_t{slot} << 32) | tensor);
    h.bytes(st.params.data(), st.params.size());
    h.num(st.groups.x);
    h.num(st.groups.y);
    h.num(st.groups.z);
  }
  return h.digest();
}

}  // namespace

KernelDatabase::KernelDatabase(Device device) : device_(std::move(device)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "KernelDatabase needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  register_builtins();
}

KernelDatabase::KernelDatabase(Runtime& runtime) : runtime_(&runtime) { register_builtins(); }

KernelDatabase::KernelDatabase() : KernelDatabase(Runtime::global()) {}

void KernelDatabase::register_builtins() {
  for (const std::string& op : ops::names())
    factories_[op] = [op](const DeviceInfo& info, const Shape& shape) { return ops::plan(op, info, shape); };
}

Device KernelDatabase::device() const {
  std::lock_guard lock(mutex_);
  return device_;
}

void KernelDatabase::call(const std::string& id, const Shape& shape, std::span<const TensorArg> args) {
  for (;;) {
    std::shared_ptr<PersistentKernel> kernel;
    Device used;
    try {
      kernel = get(id, shape);
      used = kernel->device();
      (*kernel)(args);
      return;
    } catch (const Error& e) {
      // A timeout is the caller's limit, not the device failing: running the call again
      // elsewhere would take longer still, so it reaches the caller. (If it lost the device,
      // the next get() builds on a fresh one.)
      const ErrorCategory c = e.category();
      const bool device_failure = c == ErrorCategory::compile_error || c == ErrorCategory::out_of_memory ||
                                  c == ErrorCategory::device_lost || c == ErrorCategory::unavailable ||
                                  c == ErrorCategory::not_supported;
      if (!runtime_ || !device_failure) throw;
      if (!used) used = device();  // get() failed while building on the selected device
      if (!used || !runtime_->demote(id, shape, used, e.what())) throw;
      // The failed device's kernels for id go; the next get() selects (and builds) elsewhere.
      std::lock_guard lock(mutex_);
      std::erase_if(kernels_, [&](const auto& kv) {
        return kv.second.id == id && kv.second.kernel && kv.second.kernel->device() == used;
      });
    }
  }
}

void KernelDatabase::add(const std::string& id, PlanFactory factory) {
  if (id.empty() || !factory)
    fail(ErrorCategory::invalid_argument, "KernelDatabase::add needs a non-empty id and a factory.",
         "pass an id such as \"my_kernel\" and a function (DeviceInfo, Shape) -> KernelPlan.");
  std::lock_guard lock(mutex_);
  factories_[id] = std::move(factory);
  std::erase_if(kernels_, [&](const auto& kv) { return kv.second.id == id; });
  std::erase_if(chosen_, [&](const auto& kv) { return kv.first.first == id; });
}

std::shared_ptr<PersistentKernel> KernelDatabase::get(const std::string& id, const Shape& shape) {
  std::lock_guard lock(mutex_);
  auto f = factories_.find(id);
  if (f == factories_.end()) {
    std::string known;
    for (const auto& [name, _] : factories_) known += (known.empty() ? "" : ", ") + name;
    fail(ErrorCategory::invalid_argument, "no kernel '" + id + "' is registered in this KernelDatabase.",
         "register it with add(), or use one of: " + known + ".");
  }
  // With selection, the device is chosen per size class (calibrating on first use, which runs
  // under this lock: the first call of a class waits for its calibration anyway).
  if (runtime_) {
    const std::uint64_t epoch = runtime_->selection_epoch();
    Chosen& c = chosen_[{id, shape}];
    // A lost device is never used again: selecting again opens a fresh one for the same id.
    if (!c.device || c.epoch != epoch || c.device.lost()) c = Chosen{runtime_->select(id, shape, f->second), epoch};
    device_ = c.device;
  }
  KernelPlan plan = f->second(device_.info(), shape);
  const std::uint64_t key = plan_key(id + "@" + device_.info().id() + "#" + device_.info().fingerprint.hex(), shape, plan);
  if (auto it = kernels_.find(key); it != kernels_.end()) {
    if (!it->second.kernel->device().lost()) {
      ++hits_;
      return it->second.kernel;
    }
    kernels_.erase(it);  // built on a device that is lost since: build it again on this one
  }
  // Building under the lock keeps "one build per key" simple; builds are rare by design.
  auto kernel = std::make_shared<PersistentKernel>(device_, std::move(plan));
  kernels_.emplace(key, Entry{id, kernel});
  ++misses_;
  return kernel;
}

std::uint64_t KernelDatabase::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

std::uint64_t KernelDatabase::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

std::size_t KernelDatabase::size() const {
  std::lock_guard lock(mutex_);
  return kernels_.size();
}

std::string KernelDatabase::report() const {
  std::lock_guard lock(mutex_);
  return "KernelDB: " + std::to_string(hits_) + " hits, " + std::to_string(misses_) + " compiles";
}

void KernelDatabase::evict(const std::string& id) {
  std::lock_guard lock(mutex_);
  std::erase_if(kernels_, [&](const auto& kv) { return kv.second.id == id; });
}

void KernelDatabase::evict() {
  std::lock_guard lock(mutex_);
  kernels_.clear();
}

}  // namespace vgpu
