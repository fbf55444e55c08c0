// SPDX-License-Identifier: Apache-2.0
// vgpu/persistent_kernel.hpp — compile once, bind once, dispatch many.
#pragma once

#include "vgpu/export.hpp"

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "vgpu/array.hpp"
#include "vgpu/device.hpp"
#include "vgpu/kernel_plan.hpp"

namespace vgpu {

/// A host tensor passed to a PersistentKernel call: element type, shape and data pointer.
/// A const pointer makes it input-only; outputs need a mutable pointer.
class VGPU_API TensorArg {
 public:
  /// Read-only float32 tensor.
  TensorArg(const float* data, Shape shape) : TensorArg(DType::f32, std::move(shape), data, nullptr) {}
  /// Writable float32 tensor.
  TensorArg(float* data, Shape shape) : TensorArg(DType::f32, std::move(shape), data, data) {}
  /// Read-only int32 tensor.
  TensorArg(const std::int32_t* data, Shape shape) : TensorArg(DType::i32, std::move(shape), data, nullptr) {}
  /// Writable int32 tensor.
  TensorArg(std::int32_t* data, Shape shape) : TensorArg(DType::i32, std::move(shape), data, data) {}
  /// Read-only uint32 tensor.
  TensorArg(const std::uint32_t* data, Shape shape) : TensorArg(DType::u32, std::move(shape), data, nullptr) {}
  /// Writable uint32 tensor.
  TensorArg(std::uint32_t* data, Shape shape) : TensorArg(DType::u32, std::move(shape), data, data) {}
  /// Read-only tensor of any dtype (data holds element_count(shape) elements of dtype).
  TensorArg(DType dtype, Shape shape, const void* data) : TensorArg(dtype, std::move(shape), data, nullptr) {}
  /// Writable tensor of any dtype.
  TensorArg(DType dtype, Shape shape, void* data) : TensorArg(dtype, std::move(shape), data, data) {}

  DType dtype;
  Shape shape;
  const void* in;  ///< data to upload (null only when the caller passed null)
  void* out;       ///< where results go (null for read-only tensors)

 private:
  TensorArg(DType d, Shape s, const void* i, void* o) : dtype(d), shape(std::move(s)), in(i), out(o) {}
};

/// A kernel compiled, allocated and bound in its constructor; a call only uploads the
/// inputs, submits the recorded batch and reads the outputs back, so changing only data
/// compiles, allocates and binds nothing. On a device that uses host memory in place (the
/// CPU device; Array::uses_host_memory) a call copies nothing: the kernel reads the inputs
/// where they are and writes the outputs into the caller's memory (a call at new addresses
/// binds them; one at the last call's addresses reuses that binding). Memory that is not
/// 4-byte aligned, or an output that overlaps another tensor, is staged through buffers of its
/// own instead, so results never depend on how the caller laid out memory. The bindings of
/// the last two address sets are kept, so a caller alternating between two outputs (a new
/// result array per call, the previous one just freed) binds nothing in the steady state.
/// Thread-safety: calls are serialised by an internal mutex (they share one set of device
/// buffers); safe to call from any thread.
class VGPU_API PersistentKernel {
 public:
  /// Compiles each of the plan's kernels once, allocates every tensor and binds and records
  /// every step (all into one batch); throws invalid_argument for a malformed plan (naming the
  /// step and kernel) and whatever the device reports.
  PersistentKernel(Device device, KernelPlan plan);
  ~PersistentKernel();

  /// Runs the kernel on the given tensors (the plan's non-scratch tensors, in order);
  /// throws invalid_argument on a wrong count, dtype, shape, null or read-only output, and
  /// timeout when the call runs past the device's limit (Device::timeout()). After a device
  /// loss it recovers the device in place (see Device) and, when the loss struck during this
  /// call, runs it once more: device_lost reaches the caller only when that fails too.
  void operator()(std::span<const TensorArg> args);
  /// Initializer-list form of operator().
  void operator()(std::initializer_list<TensorArg> args) {
    (*this)(std::span<const TensorArg>(args.begin(), args.size()));
  }
  /// Runs the kernel like operator()(args), giving up once limit has passed since the call
  /// started (0: no limit; see Device::round_trip): throws timeout, and the outputs are then
  /// incomplete (a timeout is never retried). After a timeout that lost the device, the next
  /// call recovers it and runs.
  void operator()(std::span<const TensorArg> args, std::chrono::milliseconds limit);
  /// Initializer-list form of operator()(args, limit).
  void operator()(std::initializer_list<TensorArg> args, std::chrono::milliseconds limit) {
    (*this)(std::span<const TensorArg>(args.begin(), args.size()), limit);
  }

  /// Runs the kernel on arrays of its device (the plan's non-scratch tensors, in order): no
  /// host traffic. Inputs are copied on the device into the kernel's buffers, the batch runs,
  /// outputs are copied on the device into their arrays; on a device that uses host memory in
  /// place the kernel runs on the arrays' memory itself. Submits without waiting (the arrays
  /// are read in order after it). Throws invalid_argument for a wrong count, dtype, shape or
  /// device (naming the tensor), and as operator() does.
  void operator()(std::span<const Array> args);

  /// Returns the number of calls made so far.
  std::uint64_t calls() const;
  /// Returns the number of kernel dispatches made so far (calls × steps).
  std::uint64_t dispatches() const;
  /// Returns the total wall time spent inside calls, in seconds.
  double total_seconds() const;
  /// Returns the bytes of device memory its buffers hold: every tensor of the plan, scratch
  /// included; on a device that uses host memory in place, the scratch tensors only (plus the
  /// others once a call has needed staging).
  std::uint64_t buffer_bytes() const noexcept;
  /// Returns the plan this kernel was built from.
  const KernelPlan& plan() const noexcept;
  /// Returns the device the kernel lives on.
  const Device& device() const noexcept;
  /// Returns the compiled kernel i of the plan (0: KernelPlan::source; i ≥ 1: more_kernels[i - 1]).
  const Kernel& kernel(std::size_t i = 0) const;

 private:
  void validate(std::span<const TensorArg> args) const;
  void validate(std::span<const Array> args) const;
  // The call itself; limit: the call's own limit, or nothing for the device's.
  void call(std::span<const TensorArg> args, const std::chrono::milliseconds* limit);
  // A call through the kernel's own buffers: upload, submit, read back (mutex held).
  void call_staged(std::span<const TensorArg> args, const std::chrono::milliseconds* limit);
  // A call on the caller's memory in place; false (nothing done) when it cannot be (mutex held).
  bool call_in_place(std::span<const TensorArg> args, const std::chrono::milliseconds* limit);
  // Allocates plan tensor i's buffer (internal: never reported lost).
  void allocate(std::uint32_t tensor);
  // Allocates the staging buffers and records the batch over them, with the copies of a call.
  void record_staged();

  // The kernel's plan, compiled kernels, buffers, recorded batches and counters
  // (persistent_kernel.cpp).
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace vgpu
