// SPDX-License-Identifier: Apache-2.0
// core/runtime/arrays/array.cpp — vgpu::Array: a buffer of one device with a dtype and a shape.
#include "vgpu/array.hpp"

#include <utility>

#include "array_state.hpp"
#include "device_core.hpp"
#include "registry.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/error.hpp"

namespace vgpu {
namespace {

std::shared_ptr<const detail::ArrayState> make_state(Device device, Buffer buffer, DType dtype, Shape shape,
                                                     bool external,
                                                     std::shared_ptr<detail::PooledStorage> storage = nullptr) {
  auto s = std::make_shared<detail::ArrayState>();
  s->device = std::move(device);
  s->storage = std::move(storage);
  s->buffer = std::move(buffer);
  s->dtype = dtype;
  s->shape = std::move(shape);
  s->external = external;
  return s;
}

// The state of a new array of bytes on device: a buffer from the device's pool when reuse is
// allowed and one of that size is free, else a new (zeroed) allocation; either way given back
// to the pool when the last array over it goes.
std::shared_ptr<const detail::ArrayState> pooled_state(const Device& device, DType dtype, Shape shape,
                                                       std::uint64_t bytes, bool reuse) {
  if (bytes == 0) return make_state(device, Buffer(), dtype, std::move(shape), false);
  Buffer buffer = reuse ? detail::device_arrays(device).pool.take(bytes) : Buffer();
  if (!buffer) buffer = detail::DeviceAccess::core(device).create_buffer(bytes);
  auto storage = std::make_shared<detail::PooledStorage>(device, buffer);
  return make_state(device, std::move(buffer), dtype, std::move(shape), false, std::move(storage));
}

void require_device(const Device& device, const char* what) {
  if (!device)
    fail(ErrorCategory::invalid_argument, std::string(what) + " got an empty Device handle.",
         "pass a device from Runtime::open() or Runtime::default_device().");
}

void require_dtype(DType dtype, const char* what) {
  if (dtype_size(dtype) == 0)
    fail(ErrorCategory::invalid_argument,
         std::string(what) + " got dtype number " + std::to_string(static_cast<int>(dtype)) + ", which is no DType.",
         "pass one of vgpu::DType's values.");
}

}  // namespace

const detail::ArrayState& Array::state() const {
  if (!state_)
    fail(ErrorCategory::invalid_argument, "empty Array handle.",
         "make arrays with Array::empty, zeros, from_host or from_external, or take an op's result.");
  return *state_;
}

Array Array::empty(const Device& device, DType dtype, Shape shape) {
  require_device(device, "Array::empty");
  require_dtype(dtype, "Array::empty");
  const std::uint64_t bytes = tensor_bytes(shape, dtype);  // checked: throws past 64 bits
  return Array(pooled_state(device, dtype, std::move(shape), bytes, true));
}

Array Array::zeros(const Device& device, DType dtype, Shape shape) {
  require_device(device, "Array::zeros");
  require_dtype(dtype, "Array::zeros");
  // A new allocation: every backend zeroes one (DeviceImpl::create_buffer's contract).
  const std::uint64_t bytes = tensor_bytes(shape, dtype);
  return Array(pooled_state(device, dtype, std::move(shape), bytes, false));
}

Array Array::from_host(const Device& device, DType dtype, Shape shape, const void* data) {
  Array a = empty(device, dtype, std::move(shape));
  if (a.nbytes() != 0) {
    if (data == nullptr)
      fail(ErrorCategory::invalid_argument,
           "Array::from_host got a null pointer for " + std::to_string(a.size()) + " elements.",
           "pass the address of the elements to copy in.");
    a.write(data);
  }
  return a;
}

Array Array::from_external(const Device& device, void* data, DType dtype, Shape shape, std::function<void()> release,
                           ArrayMemory memory) {
  require_device(device, "Array::from_external");
  require_dtype(dtype, "Array::from_external");
  if (memory == ArrayMemory::device_only)
    fail(ErrorCategory::invalid_argument,
         "Array::from_external cannot take device_only memory: vgpu cannot address it.",
         "pass ArrayMemory::host for host memory or ArrayMemory::cuda_device for a CUDA device pointer.");
  const std::uint64_t bytes = tensor_bytes(shape, dtype);
  if (data == nullptr)
    fail(ErrorCategory::invalid_argument, "Array::from_external got a null pointer.",
         "pass the address of the elements the array should use in place.");
  if (reinterpret_cast<std::uintptr_t>(data) % dtype_size(dtype) != 0)
    fail(ErrorCategory::invalid_argument,
         "Array::from_external got an address not aligned to its " + std::string(to_string(dtype)) + " elements (" +
             std::to_string(dtype_size(dtype)) + " bytes); kernels cannot read them in place.",
         "pass memory aligned to its elements (every allocator's is), or copy it in with Array::from_host.");
  if (bytes == 0) {  // nothing to use in place: an array without a buffer, released at once
    if (release) release();
    return Array(make_state(device, Buffer(), dtype, std::move(shape), true));
  }
  // The owner runs release when the buffer over the memory is freed (DeviceCore retires it
  // after the buffer's backend object, so after the work that used the memory). Disarmed when
  // the import fails: the memory stays the caller's and release must not run.
  auto owner = std::make_shared<detail::ReleaseOnce>();
  owner->fn = std::move(release);
  Buffer buffer;
  try {
    buffer = detail::DeviceAccess::core(device).import_memory(data, bytes, owner, memory == ArrayMemory::cuda_device);
  } catch (...) {
    owner->fn = nullptr;
    throw;
  }
  if (!buffer) {
    owner->fn = nullptr;
    if (memory == ArrayMemory::cuda_device)
      fail(ErrorCategory::not_supported,
           device.info().id() + " cannot use that memory in place: it is not CUDA memory of this GPU.",
           "import it on the device that allocated it (cuda:<its ordinal>), or copy it in with Array::from_host.");
    fail(ErrorCategory::not_supported,
         device.info().id() + " cannot use host memory in place (its memory is the " +
             std::string(to_string(device.info().backend)) + " API's own).",
         "copy the data in with Array::from_host, or use the cpu device for zero-copy arrays (docs/arrays.md).");
  }
  return Array(make_state(device, std::move(buffer), dtype, std::move(shape), true));
}

bool Array::uses_host_memory(const Device& device) {
  require_device(device, "Array::uses_host_memory");
  return detail::DeviceAccess::core(device).imports_host();
}

Device Array::device_for(ArrayMemory memory, std::uint32_t index) {
  const BufferAddress::Space space = memory == ArrayMemory::host          ? BufferAddress::Space::host
                                     : memory == ArrayMemory::cuda_device ? BufferAddress::Space::cuda_device
                                                                          : BufferAddress::Space::none;
  const std::optional<BackendKind> kind = detail::backend_for_memory(space);
  if (!kind)
    fail(ErrorCategory::invalid_argument,
         "Array::device_for: no device's memory is device_only memory of another library.",
         "ask for ArrayMemory::host or ArrayMemory::cuda_device.");
  return Runtime::global().open(std::string(to_string(*kind)) + ":" + std::to_string(index));
}

const Device& Array::device() const { return state().device; }
DType Array::dtype() const { return state().dtype; }
const Shape& Array::shape() const { return state().shape; }
std::uint64_t Array::size() const { return element_count(state().shape); }
std::uint64_t Array::nbytes() const { return tensor_bytes(state().shape, state().dtype); }
bool Array::external() const { return state().external; }
const Buffer& Array::buffer() const { return state().buffer; }

void* Array::data() const {
  const detail::ArrayState& s = state();
  if (!s.buffer) return nullptr;
  return detail::DeviceAccess::core(s.device).address(s.buffer).ptr;
}

ArrayMemory Array::memory() const {
  const detail::ArrayState& s = state();
  // A zero-element array has no buffer: its device's buffers are where it would be.
  const BufferAddress::Space space = s.buffer ? detail::DeviceAccess::core(s.device).address(s.buffer).space
                                              : detail::memory_of(s.device.info().backend);
  switch (space) {
    case BufferAddress::Space::host:
      return ArrayMemory::host;
    case BufferAddress::Space::cuda_device:
      return ArrayMemory::cuda_device;
    case BufferAddress::Space::none:
      break;
  }
  return ArrayMemory::device_only;
}

void Array::read(void* out) const {
  const detail::ArrayState& s = state();
  if (!s.buffer) return;
  if (out == nullptr)
    fail(ErrorCategory::invalid_argument, "Array::read of " + describe() + " into a null pointer.",
         "pass the address of " + std::to_string(nbytes()) + " writable bytes.");
  detail::DeviceAccess::core(s.device).read(s.buffer, out, s.buffer.size(), 0);
}

void Array::write(const void* data) {
  const detail::ArrayState& s = state();
  if (!s.buffer) return;
  if (data == nullptr)
    fail(ErrorCategory::invalid_argument, "Array::write to " + describe() + " from a null pointer.",
         "pass the address of " + std::to_string(nbytes()) + " readable bytes.");
  detail::DeviceAccess::core(s.device).write(s.buffer, data, s.buffer.size(), 0);
}

Array Array::copy() const { return to(state().device); }

Array Array::to(const Device& device) const {
  require_device(device, "Array::to");
  const detail::ArrayState& s = state();
  Array out = empty(device, s.dtype, s.shape);
  if (!s.buffer) return out;
  if (device == s.device) {
    detail::DeviceAccess::core(device).copy(s.buffer, out.state().buffer, s.buffer.size(), 0, 0);
    return out;
  }
  // Between devices through the host: each API's memory is its own. Where the source's memory
  // is host memory (cpu), it is the staging itself.
  if (void* p = data(); p && memory() == ArrayMemory::host) {
    out.write(p);
    return out;
  }
  std::vector<unsigned char> staging(static_cast<std::size_t>(s.buffer.size()));
  read(staging.data());
  out.write(staging.data());
  return out;
}

Array Array::reshape(Shape shape) const {
  const detail::ArrayState& s = state();
  if (element_count(shape) != element_count(s.shape))
    fail(ErrorCategory::invalid_argument,
         "cannot reshape " + describe() + " to " + vgpu::to_string(shape) + ": " +
             std::to_string(element_count(s.shape)) + " elements against " + std::to_string(element_count(shape)) + ".",
         "pass a shape with the same number of elements.");
  return Array(make_state(s.device, s.buffer, s.dtype, std::move(shape), s.external, s.storage));
}

std::string Array::describe() const {
  if (!state_) return "an empty Array";
  return std::string(to_string(state_->dtype)) + vgpu::to_string(state_->shape) + " on " + state_->device.info().id();
}

}  // namespace vgpu
