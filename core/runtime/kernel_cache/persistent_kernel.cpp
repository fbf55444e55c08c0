// SPDX-License-Identifier: Apache-2.0
// core/runtime/kernel_cache/persistent_kernel.cpp — compile/allocate/bind once; per call only copy and submit.
#include "vgpu/persistent_kernel.hpp"

#include <array>
#include <cstring>
#include <mutex>
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

// The steps recorded over one in-place call's memory: views of the caller's tensors there.
struct InPlaceBinding {
  Batch batch;                     // empty until recorded
  std::vector<const void*> bound;  // the addresses batch was recorded for, per argument
  std::vector<Buffer> views;       // per argument: the view of the caller's memory it binds
};

struct PersistentKernel::State {
  State(Device d, KernelPlan p) : device_(std::move(d)), plan_(std::move(p)) {}
  Device device_;
  KernelPlan plan_;
  std::vector<Kernel> kernels_;         // one per plan kernel
  std::vector<Buffer> buffers_;         // one per plan tensor
  std::uint64_t buffer_bytes_ = 0;      // their sizes, summed
  std::vector<std::uint32_t> visible_;  // tensor indices the caller passes, in order
  Batch staged_;                        // the steps over buffers_ (empty until a staged call)
  bool imports_ = false;                // the device uses host memory in place
  // The last two in-place bindings: a caller alternating between two outputs (each call's
  // new result allocated while the previous one still lives, then freed) finds both bound.
  std::array<InPlaceBinding, 2> in_place_;
  std::size_t last_in_place_ = 0;       // the binding the last in-place call used
  std::vector<const void*> addresses_;  // scratch of call_in_place, reused
  // One round trip's copies, built once: a call only points them at the caller's data.
  std::vector<HostWrite> writes_;
  std::vector<HostRead> reads_;
  std::vector<std::size_t> write_arg_, read_arg_;  // the argument each copy takes its pointer from
  mutable std::mutex mutex_;
  std::uint64_t calls_ = 0;
  std::chrono::nanoseconds total_{0};
};

PersistentKernel::~PersistentKernel() = default;

std::uint64_t PersistentKernel::buffer_bytes() const noexcept { return s_->buffer_bytes_; }
const KernelPlan& PersistentKernel::plan() const noexcept { return s_->plan_; }
const Device& PersistentKernel::device() const noexcept { return s_->device_; }
const Kernel& PersistentKernel::kernel(std::size_t i) const { return s_->kernels_.at(i); }

PersistentKernel::PersistentKernel(Device device, KernelPlan plan)
    : s_(std::make_unique<State>(std::move(device), std::move(plan))) {
  if (!s_->device_)
    fail(ErrorCategory::invalid_argument, "PersistentKernel needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  validate_plan(s_->plan_);
  s_->kernels_.reserve(s_->plan_.kernel_count());
  for (std::size_t i = 0; i < s_->plan_.kernel_count(); ++i) {
    const std::string where = "kernel " + to_string(i) + " of the plan for '" + s_->plan_.source.name + "'";
    s_->kernels_.push_back(in_plan(s_->plan_, where, [&] {
      return s_->device_.compile(s_->plan_.kernel_source(i), s_->plan_.kernel_options(i));
    }));
  }
  // On a device that uses host memory in place (the CPU), calls bind the caller's memory
  // itself: only scratch tensors get buffers now, and staging buffers only if a call ever
  // needs them (memory that cannot be used in place).
  s_->imports_ = detail::DeviceAccess::core(s_->device_).imports_host();
  s_->buffers_.resize(s_->plan_.tensors.size());
  for (std::uint32_t i = 0; i < s_->plan_.tensors.size(); ++i) {
    const TensorSpec& t = s_->plan_.tensors[i];
    if (!t.scratch) s_->visible_.push_back(i);
    if (t.scratch || !s_->imports_) allocate(i);
  }
  if (!s_->imports_) {
    record_staged();
    return;
  }
  // In place, calls bind the caller's memory; the plan's bindings are still checked now, so a
  // malformed plan is refused here, naming its step, as on every device: the steps are recorded
  // once over views of the tensors' sizes at a placeholder address (checked, never run).
  alignas(64) static std::byte placeholder[64];
  std::vector<Buffer> by_tensor = s_->buffers_;
  detail::DeviceCore& core = detail::DeviceAccess::core(s_->device_);
  for (std::uint32_t v : s_->visible_) {
    const TensorSpec& t = s_->plan_.tensors[v];
    by_tensor[v] = core.import_memory(placeholder, tensor_bytes(t.shape, t.dtype), nullptr);
  }
  (void)detail::record_plan(s_->device_, s_->plan_, s_->kernels_, by_tensor);
}

void PersistentKernel::allocate(std::uint32_t tensor) {
  const TensorSpec& t = s_->plan_.tensors[tensor];
  // Internal: every call rewrites the inputs and the steps rewrite the rest, so a recovery
  // never reports their contents lost.
  const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);
  s_->buffers_[tensor] = detail::DeviceAccess::internal_buffer(s_->device_, bytes);
  s_->buffer_bytes_ += bytes;
}

void PersistentKernel::record_staged() {
  for (std::size_t a = 0; a < s_->visible_.size(); ++a) {
    if (!s_->buffers_[s_->visible_[a]]) allocate(s_->visible_[a]);
    const TensorSpec& t = s_->plan_.tensors[s_->visible_[a]];
    const std::uint64_t bytes = tensor_bytes(t.shape, t.dtype);
    if (t.access != Access::write) {
      s_->writes_.push_back(HostWrite{s_->buffers_[s_->visible_[a]], nullptr, bytes, 0});
      s_->write_arg_.push_back(a);
    }
    if (t.access != Access::read) {
      s_->reads_.push_back(HostRead{s_->buffers_[s_->visible_[a]], nullptr, bytes, 0});
      s_->read_arg_.push_back(a);
    }
  }
  s_->staged_ = detail::record_plan(s_->device_, s_->plan_, s_->kernels_, s_->buffers_);
}

void PersistentKernel::validate(std::span<const TensorArg> args) const {
  const std::string& name = s_->plan_.source.name;
  if (args.size() != s_->visible_.size()) {
    std::string expected;
    for (auto i : s_->visible_) expected += (expected.empty() ? "" : ", ") + s_->plan_.tensors[i].name;
    fail(ErrorCategory::invalid_argument,
         "kernel '" + name + "' takes " + to_string(s_->visible_.size()) + " tensors (" + expected + ") but got " +
             to_string(args.size()) + ".",
         "pass one TensorArg per tensor, in that order.");
  }
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = s_->plan_.tensors[s_->visible_[a]];
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
  const std::string& name = s_->plan_.source.name;
  if (args.size() != s_->visible_.size())
    fail(ErrorCategory::invalid_argument,
         "kernel '" + name + "' takes " + to_string(s_->visible_.size()) + " arrays but got " + to_string(args.size()) +
             ".",
         "pass one array per tensor of its plan, in order.");
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = s_->plan_.tensors[s_->visible_[a]];
    auto label = [&] { return "tensor '" + t.name + "' (argument " + to_string(a) + ") of kernel '" + name + "'"; };
    if (!args[a])
      fail(ErrorCategory::invalid_argument, label() + " is an empty Array handle.",
           "pass an array of the kernel's device.");
    if (!(args[a].device() == s_->device_))
      fail(ErrorCategory::invalid_argument,
           label() + " is " + args[a].describe() + " but the kernel runs on " + s_->device_.info().id() +
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
  detail::DeviceAccess::core(s_->device_).check_not_inside();
  std::lock_guard lock(s_->mutex_);
  const auto start = std::chrono::steady_clock::now();
  bool host = s_->imports_;
  for (const Array& a : args) host = host && a.memory() == ArrayMemory::host;
  std::vector<TensorArg> targs;
  if (host) {  // the arrays' memory is host memory the device runs on: the in-place call
    for (std::size_t a = 0; a < args.size(); ++a)
      targs.emplace_back(s_->plan_.tensors[s_->visible_[a]].dtype, s_->plan_.tensors[s_->visible_[a]].shape,
                         args[a].data());
    host = call_in_place(targs, nullptr);
  }
  if (!host) {
    // Device copies into the kernel's buffers and out again, ordered with the batch.
    if (!s_->staged_) record_staged();
    for (std::size_t a = 0; a < args.size(); ++a)
      if (s_->plan_.tensors[s_->visible_[a]].access != Access::write && args[a].nbytes() != 0)
        s_->device_.copy(args[a].buffer(), s_->buffers_[s_->visible_[a]], args[a].nbytes());
    s_->device_.submit(s_->staged_);
    for (std::size_t a = 0; a < args.size(); ++a)
      if (s_->plan_.tensors[s_->visible_[a]].access != Access::read && args[a].nbytes() != 0)
        s_->device_.copy(s_->buffers_[s_->visible_[a]], args[a].buffer(), args[a].nbytes());
  }
  s_->total_ += std::chrono::steady_clock::now() - start;
  ++s_->calls_;
}

void PersistentKernel::operator()(std::span<const TensorArg> args, std::chrono::milliseconds limit) {
  call(args, &limit);
}

void PersistentKernel::call(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  validate(args);
  // Before the kernel's own lock: a CPU kernel calling the kernel it runs in would wait for
  // that lock forever instead of being refused by its device.
  detail::DeviceAccess::core(s_->device_).check_not_inside();
  std::lock_guard lock(s_->mutex_);
  const auto start = std::chrono::steady_clock::now();
  if (!(s_->imports_ && call_in_place(args, limit))) call_staged(args, limit);
  s_->total_ += std::chrono::steady_clock::now() - start;
  ++s_->calls_;
}

void PersistentKernel::call_staged(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  if (!s_->staged_) record_staged();  // an in-place kernel whose call could not be
  for (std::size_t i = 0; i < s_->writes_.size(); ++i) s_->writes_[i].data = args[s_->write_arg_[i]].in;
  for (std::size_t i = 0; i < s_->reads_.size(); ++i) s_->reads_[i].out = args[s_->read_arg_[i]].out;
  // Every input is on the host, so a call the device was lost under runs once more: the trip
  // recovers the device first (buffers, kernels, bindings and batch rebuilt in place). Once
  // only: a device that fails again reaches the caller (a KernelDatabase then demotes it).
  detail::retry_once_after_loss([&] {
    if (limit)
      s_->device_.round_trip(s_->writes_, s_->staged_, s_->reads_, *limit);
    else
      s_->device_.round_trip(s_->writes_, s_->staged_, s_->reads_);
  });
}

bool PersistentKernel::call_in_place(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  State& s = *s_;
  // Where each tensor's memory is: inputs where they are read, outputs where they go (a
  // read_write tensor with a separate input is copied to its output first, below).
  s.addresses_.resize(args.size());
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = s.plan_.tensors[s.visible_[a]];
    const void* p = t.access == Access::read ? args[a].in : args[a].out;
    if (reinterpret_cast<std::uintptr_t>(p) % dtype_size(t.dtype) != 0) return false;  // kernels load whole elements
    s.addresses_[a] = p;
  }
  // A tensor written in place must not overlap another: the kernel would read what it has
  // already overwritten (C = A·B into A's memory). Staging copies keep such a call right.
  auto bytes_of = [&](std::size_t a) {
    const TensorSpec& t = s.plan_.tensors[s.visible_[a]];
    return tensor_bytes(t.shape, t.dtype);
  };
  for (std::size_t a = 0; a < args.size(); ++a) {
    if (s.plan_.tensors[s.visible_[a]].access == Access::read) continue;
    const auto* pa = static_cast<const unsigned char*>(s.addresses_[a]);
    const std::uint64_t na = bytes_of(a);
    for (std::size_t b = 0; b < args.size(); ++b) {
      if (b == a) continue;
      const auto* pb = static_cast<const unsigned char*>(s.addresses_[b]);
      if (pa < pb + bytes_of(b) && pb < pa + na) return false;
    }
  }
  // A binding recorded at these addresses runs as it is; otherwise the one used less recently
  // is recorded again for them, reusing any view either binding has at the same memory (the
  // same argument: the same size).
  std::size_t use = s.in_place_.size();
  for (std::size_t i = 0; i < s.in_place_.size(); ++i)
    if (s.in_place_[i].batch && s.in_place_[i].bound == s.addresses_) use = i;
  if (use == s.in_place_.size()) {
    use = 1 - s.last_in_place_;
    InPlaceBinding& slot = s.in_place_[use];
    const InPlaceBinding& other = s.in_place_[s.last_in_place_];
    detail::DeviceCore& core = detail::DeviceAccess::core(s.device_);
    std::vector<Buffer> views(args.size());
    for (std::size_t a = 0; a < args.size(); ++a) {
      const void* at = s.addresses_[a];
      if (slot.bound.size() == args.size() && slot.bound[a] == at) {
        views[a] = slot.views[a];
      } else if (other.bound.size() == args.size() && other.bound[a] == at) {
        views[a] = other.views[a];
      } else {
        // The buffer (a view, kept for later calls at the same addresses) is never used
        // without the caller passing that memory again: the caller's memory outlives the call.
        views[a] = core.import_memory(const_cast<void*>(at), bytes_of(a), nullptr);
        if (!views[a]) {
          slot = InPlaceBinding{};  // its views may be gone: recorded again when next needed
          return false;
        }
      }
    }
    // The scratch tensors' buffers, and the views at the caller's tensors.
    std::vector<Buffer> by_tensor = s.buffers_;
    for (std::size_t a = 0; a < args.size(); ++a) by_tensor[s.visible_[a]] = views[a];
    slot.batch = detail::record_plan(s.device_, s.plan_, s.kernels_, by_tensor);
    slot.views = std::move(views);
    slot.bound = s.addresses_;
  }
  s.last_in_place_ = use;
  for (std::size_t a = 0; a < args.size(); ++a) {
    const TensorSpec& t = s.plan_.tensors[s.visible_[a]];
    if (t.access == Access::read_write && args[a].in != args[a].out)
      std::memmove(args[a].out, args[a].in, static_cast<std::size_t>(bytes_of(a)));
  }
  // Retried after a loss as a staged call is: a device that imports (the CPU) runs nothing of a
  // batch whose submit reports the loss, so read_write tensors still hold their inputs.
  const Batch& batch = s.in_place_[use].batch;
  detail::retry_once_after_loss([&] {
    if (limit)
      s.device_.round_trip({}, batch, {}, *limit);
    else
      s.device_.round_trip({}, batch, {});
  });
  return true;
}

std::uint64_t PersistentKernel::calls() const {
  std::lock_guard lock(s_->mutex_);
  return s_->calls_;
}

std::uint64_t PersistentKernel::dispatches() const {
  std::lock_guard lock(s_->mutex_);
  return s_->calls_ * s_->plan_.steps.size();
}

double PersistentKernel::total_seconds() const {
  std::lock_guard lock(s_->mutex_);
  return std::chrono::duration<double>(s_->total_).count();
}

}  // namespace vgpu
