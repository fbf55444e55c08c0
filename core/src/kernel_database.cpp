// core/src/kernel_database.cpp — persistent kernels by (id, shape, plan content).
#include "vgpu/kernel_database.hpp"

#include <cstdio>

#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"

namespace vgpu {
namespace {

void put(std::string& s, std::string_view field) {
  s += std::to_string(field.size());
  s += ':';
  s += field;
}

// Everything that decides what a persistent kernel is: source text per dialect,
// specialisation, tensors (dtype, shape, access) and the binding topology of every step.
std::string plan_fingerprint(const KernelPlan& p) {
  std::string s;
  put(s, p.source.name);
  put(s, p.source.glsl);
  put(s, p.source.cuda);
  put(s, p.source.cuda_entry);
  put(s, p.source.cpu.builtin);
  put(s, p.source.cpu.version);
  put(s, p.source.cpu.fn ? p.source.cpu.fn.target_type().name() : "");
  for (const auto& b : p.source.bindings) put(s, std::to_string(b.slot) + "/" + std::string(to_string(b.access)));
  put(s, std::to_string(p.source.params_size));
  for (const auto& [k, v] : p.options.defines) put(s, k + "=" + v);
  for (auto w : p.options.workgroup_size) put(s, std::to_string(w));
  for (const auto& t : p.tensors)
    put(s, t.name + "/" + std::string(to_string(t.dtype)) + "/" + to_string(t.shape) + "/" +
               std::string(to_string(t.access)) + (t.scratch ? "/scratch" : ""));
  for (const auto& st : p.steps) {
    for (const auto& [slot, tensor] : st.slot_tensor) put(s, std::to_string(slot) + ">" + std::to_string(tensor));
    put(s, std::string_view(static_cast<const char*>(st.params.data()), st.params.size()));
    put(s, std::to_string(st.groups.x) + "," + std::to_string(st.groups.y) + "," + std::to_string(st.groups.z));
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(cache::hash64(s)));
  return hex;
}

}  // namespace

KernelDatabase::KernelDatabase(Device device) : device_(std::move(device)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "KernelDatabase needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  for (const std::string& op : ops::names())
    factories_[op] = [op](const DeviceInfo& info, const Shape& shape) { return ops::plan(op, info, shape); };
}

void KernelDatabase::add(const std::string& id, PlanFactory factory) {
  if (id.empty() || !factory)
    fail(ErrorCategory::invalid_argument, "KernelDatabase::add needs a non-empty id and a factory.",
         "pass an id such as \"my_kernel\" and a function (DeviceInfo, Shape) -> KernelPlan.");
  std::lock_guard lock(mutex_);
  factories_[id] = std::move(factory);
  const std::string prefix = id + "|";
  std::erase_if(kernels_, [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
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
  KernelPlan plan = f->second(device_.info(), shape);
  const std::string key = id + "|" + to_string(shape) + "|" + plan_fingerprint(plan);
  if (auto it = kernels_.find(key); it != kernels_.end()) {
    ++hits_;
    return it->second;
  }
  // Building under the lock keeps "one build per key" simple; builds are rare by design.
  auto kernel = std::make_shared<PersistentKernel>(device_, std::move(plan));
  kernels_.emplace(key, kernel);
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
  const std::string prefix = id + "|";
  std::erase_if(kernels_, [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
}

void KernelDatabase::evict() {
  std::lock_guard lock(mutex_);
  kernels_.clear();
}

}  // namespace vgpu
