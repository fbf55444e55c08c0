// core/src/persistent_kernel.cpp — compile/allocate/bind once; per call only copy and submit.
#include "vgpu/persistent_kernel.hpp"

#include <set>
#include <string>

#include "vgpu/error.hpp"

namespace vgpu {
namespace {

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
    if (t.shape.empty() || element_count(t.shape) == 0)
      fail(ErrorCategory::invalid_argument,
           "tensor '" + t.name + "' of kernel '" + name + "' has shape " + vgpu::to_string(t.shape) + " with no elements.",
           "give every tensor a shape with all dimensions ≥ 1.");
  }
  for (const PlanStep& step : plan.steps) {
    std::set<std::uint32_t> slots;
    for (const auto& [slot, tensor] : step.slot_tensor) {
      if (tensor >= plan.tensors.size())
        fail(ErrorCategory::invalid_argument,
             "a step of kernel '" + name + "' binds slot " + to_string(slot) + " to tensor " + to_string(tensor) +
                 ", but the plan has " + to_string(plan.tensors.size()) + " tensors.",
             "refer to tensors by their index in KernelPlan::tensors.");
      if (!slots.insert(slot).second)
        fail(ErrorCategory::invalid_argument, "a step of kernel '" + name + "' binds slot " + to_string(slot) + " twice.",
             "bind each slot once per step.");
    }
  }
}

}  // namespace

PersistentKernel::PersistentKernel(Device device, KernelPlan plan) : device_(std::move(device)), plan_(std::move(plan)) {
  if (!device_)
    fail(ErrorCategory::invalid_argument, "PersistentKernel needs an open device.",
         "pass Runtime::global().default_device() or a device from Runtime::open().");
  validate_plan(plan_);
  kernel_ = device_.compile(plan_.source, plan_.options);
  buffers_.reserve(plan_.tensors.size());
  for (std::uint32_t i = 0; i < plan_.tensors.size(); ++i) {
    const TensorSpec& t = plan_.tensors[i];
    buffers_.push_back(device_.create_buffer(element_count(t.shape) * dtype_size(t.dtype)));
    if (!t.scratch) visible_.push_back(i);
  }
  for (std::size_t a = 0; a < visible_.size(); ++a) {
    const TensorSpec& t = plan_.tensors[visible_[a]];
    const std::uint64_t bytes = element_count(t.shape) * dtype_size(t.dtype);
    if (t.access != Access::write) {
      writes_.push_back(HostWrite{buffers_[visible_[a]], nullptr, bytes, 0});
      write_arg_.push_back(a);
    }
    if (t.access != Access::read) {
      reads_.push_back(HostRead{buffers_[visible_[a]], nullptr, bytes, 0});
      read_arg_.push_back(a);
    }
  }
  batch_ = device_.create_batch();
  for (const PlanStep& step : plan_.steps) {
    std::vector<Binding> bindings;
    for (const auto& [slot, tensor] : step.slot_tensor) bindings.push_back(Binding{slot, buffers_[tensor]});
    batch_.dispatch(kernel_, device_.bind(kernel_, bindings), step.params, step.groups);
  }
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
           label() + " has shape " + vgpu::to_string(arg.shape) + " but the kernel was built for " + vgpu::to_string(t.shape) + ".",
           "pass data of that shape, or get a kernel for the new shape from KernelDatabase::get().");
    if (t.access != Access::write && arg.in == nullptr)
      fail(ErrorCategory::invalid_argument, label() + " is an input but its data pointer is null.",
           "pass a pointer to " + to_string(element_count(t.shape)) + " elements.");
    if (t.access != Access::read && arg.out == nullptr)
      fail(ErrorCategory::invalid_argument,
           label() + " is an output but was passed as read-only (const or null) data.",
           "pass a mutable pointer to " + to_string(element_count(t.shape)) + " elements.");
  }
}

void PersistentKernel::operator()(std::span<const TensorArg> args) { call(args, nullptr); }

void PersistentKernel::operator()(std::span<const TensorArg> args, std::chrono::milliseconds limit) {
  call(args, &limit);
}

void PersistentKernel::call(std::span<const TensorArg> args, const std::chrono::milliseconds* limit) {
  validate(args);
  std::lock_guard lock(mutex_);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < writes_.size(); ++i) writes_[i].data = args[write_arg_[i]].in;
  for (std::size_t i = 0; i < reads_.size(); ++i) reads_[i].out = args[read_arg_[i]].out;
  if (limit)
    device_.round_trip(writes_, batch_, reads_, *limit);
  else
    device_.round_trip(writes_, batch_, reads_);
  total_ += std::chrono::steady_clock::now() - start;
  ++calls_;
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
