// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/persistent_kernel.cpp — compile/allocate/bind once; per call only copy and submit.
#include "vgpu/persistent_kernel.hpp"

#include <cstring>
#include <set>
#include <string>

#include "device_core.hpp"
#include "loss_policy.hpp"
#include "plan_batch.hpp"
#include "vgpu/error.hpp"

namespace vgpu {
namespace {

using detail::step_label;
using std::to_string;

void validate_plan(const KernelPlan& plan) {
  const std::string& name = plan.source.name;
  if (plan.tensors.empty())
    fail(ErrorCategory::invalid_argument, "plan for kernel '" + name + "' declares no tensors.",
         "list the kernel's buffers in KernelPlan::tensors.");
  if (plan.steps.empty())
    fail(ErrorCategory::invalid_argument, "plan for kernel '" + name + "' has no dispatch steps.",
         "add at least one PlanStep with its slot bindings, params and groups.");
  for (const TensorSpec& t : plan.tensors) {
    // Checked before any buffer is made: a size past 64 bits would wrap to a small buffer that
    // the kernel then writes past.
    std::uint64_t bytes = 0;
    try {
      bytes = tensor_bytes(t.shape, t.dtype);
    } catch (const Error& e) {
      throw Error(e.category(), "tensor '" + t.name + "' of kernel '" + name + "': " + e.problem(), e.fix());
    }
    if (t.shape.empty() || bytes == 0)
      fail(ErrorCategory::invalid_argument,
           "tensor '" + t.name + "' of kernel '" + name + "' has shape " + vgpu::to_string(t.shape) +
               " with no elements.",
           "give every tensor a shape with all dimensions ≥ 1.");
  }
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    if (step.kernel >= plan.kernel_count())
      fail(ErrorCategory::invalid_argument,
           step_label(plan, i, step) + " of the plan for '" + name + "' runs kernel " + to_string(step.kernel) +
               ", but the plan has " + to_string(plan.kernel_count()) + " kernel(s).",
           "number kernels 0 (KernelPlan::source) and 1.. (KernelPlan::more_kernels[i - 1]).");
    std::set<std::uint32_t> slots;
    for (const auto& [slot, tensor] : step.slot_tensor) {
      if (tensor >= plan.tensors.size())
        fail(ErrorCategory::invalid_argument,
             step_label(plan, i, step) + " of the plan for '" + name + "' binds slot " + to_string(slot) +
                 " to tensor " + to_string(tensor) + ", but the plan has " + to_string(plan.tensors.size()) +
                 " tensors.",
             "refer to tensors by their index in KernelPlan::tensors.");
      if (!slots.insert(slot).second)
        fail(ErrorCategory::invalid_argument,
             step_label(plan, i, step) + " of the plan for '" + name + "' binds slot " + to_string(slot) + " twice.",
             "bind each slot once per step.");
    }
  }
}

// Runs f; in a plan of several kernels, a vgpu::Error it throws gets where (the step or kernel)
// before its message (a one-kernel plan's errors read as they always did).
template <class F>
auto in_plan(const KernelPlan& plan, const std::string& where, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (plan.kernel_count() == 1) throw;
    throw Error(e.category(), where + ": " + e.problem(), e.fix());
  }
}

}  // namespace

PersistentKernel::PersistentKernel(Device device, KernelPlan plan)
    : device_(std::move(device)), plan_(std::move(plan)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "PersistentKernel needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  validate_plan(plan_);
  kernels_.reserve(plan_.kernel_count());
  for (std::size_t i = 0; i < plan_.kernel_count(); ++i) {
    const std::string where = "kernel " + to_string(i) + " of the plan for '" + plan_.source.name + "'";
    kernels_.push_back(
        in_plan(plan_, where, [&] { return device_.compile(plan_.kernel_source(i), plan_.kernel_options(i)); }));
  }
  // On a device that uses host memory in place (the CPU), calls bind the caller's memory
  // itself: only scratch tensors get buffers now, and staging buffers only if a call ever
  // needs them (memory that cannot be used in place).
  in_place_ = detail::DeviceAccess::core(device_).imports_host();
  buffers_.resize(plan_.tensors.size());
  for (std::uint32_t i = 0; i < plan_.tensors.size(); ++i) {
    const TensorSpec& t = plan_.tensors[i];
    if (!t.scratch) visible_.push_back(i);
    if (t.scratch || !in_place_) allocate(i);
  }
  views_.resize(visible_.size());
  if (!in_place_) {
    record_staged();
    return;
  }
  // In place, calls bind the caller's memory; the plan's bindings are still checked now, so a
  // malformed plan is refused here, naming its step, as on every device: the steps are recorded
  // once over views of the tensors' sizes at a placeholder address (checked, never run).
  alignas(64) static std::byte placeholder[64];
  std::vector<Buffer> by_tensor = buffers_;
  detail::DeviceCore& core = detail::DeviceAccess::core(device_);
  for (std::uint32_t v : visible_) {
    const TensorSpec& t = plan_.tensors[v];
    by_tensor[v] = core.import_memory(placeholder, tensor_bytes(t.shape, t.dtype), nullptr);
  }
  (void)detail::record_plan(device_, plan_, kernels_, by_tensor);
}

void PersistentKernel::allocate(std::uint32_t tensor) {
  const TensorSpec& t = plan_.tensors[tensor];
  // Internal: every call rewrites the inputs and the steps rewrite the rest, so a recovery
  // never reports their contents lost.
  const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);
  buffers_[tensor] = detail::DeviceAccess::internal_buffer(device_, bytes);
  buffer_bytes_ += bytes;
}

void PersistentKernel::record_staged() {
  for (std::size_t a = 0; a < visible_.size(); ++a) {
    if (!buffers_[visible_[a]]) allocate(visible_[a]);
    const TensorSpec& t = plan_.tensors[visible_[a]];
    const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);
    if (t.access != Access::write) {
      writes_.push_back(HostWrite{buffers_[visible_[a]], nullptr, bytes, 0});
      write_arg_.push_back(a);
    }
    if (t.access != Access::read) {
      reads_.push_back(HostRead{buffers_[visible_[a]], nullptr, bytes, 0});
      read_arg_.push_back(a);
    }
  }
  staged_ = detail::record_plan(device_, plan_, kernels_, buffers_);
}

void PersistentKernel::validate(std::span<const TensorArg> args) const {
  const std::string& name = plan_.source.name;
  if (args.size() != visible_.size()) {
    std::string expected;
    for (auto i : visible_) expected += (expected.empty() ? "" : ", ") + plan_.tensors[i].name;
    fail(ErrorCategory::invalid_argument,
         "kernel '" + name + "' takes " + to_string(visible_.size()) + " tensors (" + expected + ") but got " +
             to_string(args.size()) + ".",
         "pass one TensorArg per tensor, in that order.");
  }
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = plan_.tensors[visible_[a]];
    const TensorArg& arg = args[a];
    // Built only when a check fails: a correct call makes no string.
    auto label = [&] { return "tensor '" + t.name + "' (argument " + to_string(a) + ") of kernel '" + name + "'"; };
    if (arg.dtype != t.dtype)
      fail(ErrorCategory::invalid_argument,
           label() + " has dtype " + std::string(vgpu::to_string(arg.dtype)) + " but the kernel was built for " +
               std::string(vgpu::to_string(t.dtype)) + ".",
           "pass data of the kernel's element type.");
    if (arg.shape != t.shape)
      fail(ErrorCategory::invalid_argument,
           label() + " has shape " + vgpu::to_string(arg.shape) + " but the kernel was built for " +
               vgpu::to_string(t.shape) + ".",
           "pass data of that shape, or get a kernel for the new shape from KernelDatabase::get().");
    if (t.access != Access::write && arg.in == nullptr)
      fail(ErrorCategory::invalid_argument, label() + " is an input but its data pointer is null.",
           "pass a pointer to " + to_string(element_count(t.shape)) + " elements.");
    if (t.access != Access::read && arg.out == nullptr)
      fail(ErrorCategory::invalid_argument,
           label() + (t.access == Access::read_write ? " is read and written in place" : " is an output") +
               " but was passed as read-only (const or null) data.",
           "pass a mutable pointer to " + to_string(element_count(t.shape)) + " elements" +
               (t.access == Access::read_write ? " holding the input; the results replace it." : "."));
  }
}

void PersistentKernel::operator()(std::span<const TensorArg> args) { call(args, nullptr); }

void PersistentKernel::validate(std::span<const Array> args) const {
  const std::string& name = plan_.source.name;
  if (args.size() != visible_.size())
    fail(
        ErrorCategory::invalid_argument,
        "kernel '" + name + "' takes " + to_string(visible_.size()) + " arrays but got " + to_string(args.size()) + ".",
        "pass one array per tensor of its plan, in order.");
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = plan_.tensors[visible_[a]];
    auto label = [&] { return "tensor '" + t.name + "' (argument " + to_string(a) + ") of kernel '" + name + "'"; };
    if (!args[a])
      fail(ErrorCategory::invalid_argument, label() + " is an empty Array handle.",
           "pass an array of the kernel's device.");
    if (!(args[a].device() == device_))
      fail(ErrorCategory::invalid_argument,
           label() + " is " + args[a].describe() + " but the kernel runs on " + device_.info().id() +
               "; vgpu never moves data between devices silently.",
           "move it with .to(device) (Array::to) first.");
    if (args[a].dtype() != t.dtype || args[a].shape() != t.shape)
      fail(ErrorCategory::invalid_argument,
           label() + " is " + args[a].describe() + " but the kernel was built for " +
               std::string(vgpu::to_string(t.dtype)) + vgpu::to_string(t.shape) + ".",
           "pass an array of that dtype and shape, or get a kernel for the new shape from KernelDatabase::get().");
  }
}

void PersistentKernel::operator()(std::span<const Array> args) {
  validate(args);
  detail::DeviceAccess::core(device_).check_not_inside();
  std::lock_guard lock(mutex_);
  const auto start = std::chrono::steady_clock::now();
  bool host = in_place_;
  for (const Array& a : args) host = host && a.memory() == ArrayMemory::host;
  std::vector<TensorArg> targs;
  if (host) {  // the arrays' memory is host memory the device runs on: the in-place call
    for (std::size_t a = 0; a < args.size(); ++a)
      targs.emplace_back(plan_.tensors[visible_[a]].dtype, plan_.tensors[visible_[a]].shape, args[a].data());
    host = call_in_place(targs, nullptr);
  }
  if (!host) {
    // Device copies into the kernel's buffers and out again, ordered with the batch.
    if (!staged_) record_staged();
    for (std::size_t a = 0; a < args.size(); ++a)
      if (plan_.tensors[visible_[a]].access != Access::write && args[a].nbytes() != 0)
        device_.copy(args[a].buffer(), buffers_[visible_[a]], args[a].nbytes());
    device_.submit(staged_);
    for (std::size_t a = 0; a < args.size(); ++a)
      if (plan_.tensors[visible_[a]].access != Access::read && args[a].nbytes() != 0)
        device_.copy(buffers_[visible_[a]], args[a].buffer(), args[a].nbytes());
  }
  total_ += std::chrono::steady_clock::now() - start;
  ++calls_;
}

void PersistentKernel::operator()(std::span<const TensorArg> args, std::chrono::milliseconds limit) {
  call(args, &limit);
}

void PersistentKernel::call(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  validate(args);
  // Before the kernel's own lock: a CPU kernel calling the kernel it runs in would wait for
  // that lock forever instead of being refused by its device.
  detail::DeviceAccess::core(device_).check_not_inside();
  std::lock_guard lock(mutex_);
  const auto start = std::chrono::steady_clock::now();
  if (!(in_place_ && call_in_place(args, limit))) call_staged(args, limit);
  total_ += std::chrono::steady_clock::now() - start;
  ++calls_;
}

void PersistentKernel::call_staged(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  if (!staged_) record_staged();  // an in-place kernel whose call could not be
  for (std::size_t i = 0; i < writes_.size(); ++i) writes_[i].data = args[write_arg_[i]].in;
  for (std::size_t i = 0; i < reads_.size(); ++i) reads_[i].out = args[read_arg_[i]].out;
  // Every input is on the host, so a call the device was lost under runs once more: the trip
  // recovers the device first (buffers, kernels, bindings and batch rebuilt in place). Once
  // only: a device that fails again reaches the caller (a KernelDatabase then demotes it).
  detail::retry_once_after_loss([&] {
    if (limit)
      device_.round_trip(writes_, staged_, reads_, *limit);
    else
      device_.round_trip(writes_, staged_, reads_);
  });
}

bool PersistentKernel::call_in_place(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  // Where each tensor's memory is: inputs where they are read, outputs where they go (a
  // read_write tensor with a separate input is copied to its output first, below).
  addresses_.resize(args.size());
  bool same = in_place_batch_ && bound_.size() == args.size();
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = plan_.tensors[visible_[a]];
    const void* p = t.access == Access::read ? args[a].in : args[a].out;
    if (reinterpret_cast<std::uintptr_t>(p) % dtype_size(t.dtype) != 0) return false;  // kernels load whole elements
    addresses_[a] = p;
    same = same && bound_[a] == p;
  }
  // A tensor written in place must not overlap another: the kernel would read what it has
  // already overwritten (C = A·B into A's memory). Staging copies keep such a call right.
  for (std::size_t a = 0; a < args.size(); ++a) {
    if (plan_.tensors[visible_[a]].access == Access::read) continue;
    const auto* pa = static_cast<const unsigned char*>(addresses_[a]);
    const std::uint64_t na = tensor_bytes(plan_.tensors[visible_[a]].shape, plan_.tensors[visible_[a]].dtype);
    for (std::size_t b = 0; b < args.size(); ++b) {
      if (b == a) continue;
      const auto* pb = static_cast<const unsigned char*>(addresses_[b]);
      const std::uint64_t nb = tensor_bytes(plan_.tensors[visible_[b]].shape, plan_.tensors[visible_[b]].dtype);
      if (pa < pb + nb && pb < pa + na) return false;
    }
  }
  if (!same) {
    detail::DeviceCore& core = detail::DeviceAccess::core(device_);
    const bool had = bound_.size() == args.size();
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (had && bound_[a] == addresses_[a]) continue;  // this tensor's view still fits (a new output, say)
      const TensorSpec& t = plan_.tensors[visible_[a]];
      // Only for the call: the caller's memory outlives it, and the buffer (a view, kept for a
      // next call at the same addresses) is never used without the caller passing it again.
      Buffer b = core.import_memory(const_cast<void*>(addresses_[a]), tensor_bytes(t.shape, t.dtype), nullptr);
      if (!b) {
        bound_.clear();  // some views were replaced: none is known to fit any more
        return false;
      }
      views_[a] = std::move(b);
    }
    // The scratch tensors' buffers, and the views at the caller's tensors.
    std::vector<Buffer> by_tensor = buffers_;
    for (std::size_t a = 0; a < args.size(); ++a) by_tensor[visible_[a]] = views_[a];
    in_place_batch_ = detail::record_plan(device_, plan_, kernels_, by_tensor);
    bound_ = addresses_;
  }
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = plan_.tensors[visible_[a]];
    if (t.access == Access::read_write && args[a].in != args[a].out)
      std::memmove(args[a].out, args[a].in, static_cast<std::size_t>(tensor_bytes(t.shape, t.dtype)));
  }
  // Retried after a loss as a staged call is: a device that imports (the CPU) runs nothing of a
  // batch whose submit reports the loss, so read_write tensors still hold their inputs.
  detail::retry_once_after_loss([&] {
    if (limit)
      device_.round_trip({}, in_place_batch_, {}, *limit);
    else
      device_.round_trip({}, in_place_batch_, {});
  });
  return true;
}

std::uint64_t PersistentKernel::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::uint64_t PersistentKernel::dispatches() const {
  std::lock_guard lock(mutex_);
  return calls_ * plan_.steps.size();
}

double PersistentKernel::total_seconds() const {
  std::lock_guard lock(mutex_);
  return std::chrono::duration<double>(total_).count();
}

}  // namespace vgpu
