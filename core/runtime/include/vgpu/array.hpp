// SPDX-License-Identifier: Apache-2.0
// vgpu/array.hpp — n-d arrays that live on one device, so chains of ops move no data to the host.
#pragma once

#include "vgpu/export.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "vgpu/device.hpp"
#include "vgpu/types.hpp"

namespace vgpu {

namespace detail {
struct ArrayState;
}  // namespace detail

/// What the address Array::data() returns is (docs/arrays.md, "Zero-copy per backend").
enum class ArrayMemory {
  device_only,  ///< the API's own memory (Vulkan, OpenGL): reachable only through read/write
  host,  ///< host memory of this process (cpu devices; CUDA and Vulkan map it in place): data() is a plain pointer
  cuda_device,  ///< a CUDA device pointer in the device's primary context
};

/// A dense, C-contiguous (row-major) n-d array of one dtype on one Device. A shared handle:
/// copies refer to the same elements (as a numpy view does); copy() makes new ones. Its memory
/// is a device buffer, or, for from_external, the caller's own memory (host memory on a CPU
/// device or, registered with the driver, on a CUDA device or a Vulkan device that imports host
/// memory; CUDA memory on a CUDA device) used in place. Ops on arrays (vgpu/array_ops.hpp) run where the arrays are and
/// return arrays there: nothing reaches the host until read(); arrays on different devices are never mixed silently
/// (to() moves one). A zero-element array (a dimension of 0) holds no buffer. An Array keeps
/// its Device open (past its Runtime); when the device is lost, reading an array whose data
/// lived on it throws device_lost with a Fix (write() it again), while arrays over host memory
/// keep their data.
/// Thread-safety: a value handle; reading shape and dtype is safe from any thread. Calls that
/// touch the elements are device calls (ordered per device, safe from several threads); two
/// threads writing the same elements race, as with any memory.
class VGPU_API Array {
 public:
  /// An empty handle (no device, no elements); operator bool is false.
  Array() = default;

  /// Returns a new array of shape on device with uninitialised elements: its memory may be
  /// that of an array dropped earlier on the device (a per-device pool keeps dropped arrays'
  /// buffers, up to 256 MiB, so a chain of ops allocates nothing in its steady state). Any
  /// device stores any dtype; ops say which they compute in. Throws invalid_argument for a
  /// shape whose byte size does not fit 64 bits, out_of_memory when the device is full.
  static Array empty(const Device& device, DType dtype, Shape shape);
  /// Returns a new array of shape on device with every element zero (a new allocation, zeroed).
  static Array zeros(const Device& device, DType dtype, Shape shape);
  /// Returns a new array on device holding a copy of the element_count(shape) elements at data.
  static Array from_host(const Device& device, DType dtype, Shape shape, const void* data);
  /// Returns an array over memory the caller owns, used in place (zero-copy): data() returns
  /// data itself, kernels read and write it there. release runs once the array and every op
  /// that used it are done with the memory (it may be empty), on whatever thread drops the last
  /// reference. memory says what data is: host memory, used in place on a CPU device (aligned
  /// to its elements' size) or on a CUDA device (registered: page-locked and mapped for the
  /// array's life, its kernels reaching it over the bus, written asynchronously — synchronize
  /// the device before reading data() directly), on a Vulkan device whose driver imports host
  /// memory (DeviceInfo::features lists "host_memory_import"; the address must meet its storage
  /// offset alignment, 16 bytes on lavapipe and NVIDIA; synchronize likewise), or a CUDA device
  /// pointer of device's GPU
  /// (another library's allocation: torch, CuPy), used in place on a CUDA device. Throws not_supported where the
  /// device cannot reach that memory (copy it in with from_host) and invalid_argument for
  /// null, misaligned or empty data; release does not run when it throws.
  static Array from_external(const Device& device, void* data, DType dtype, Shape shape, std::function<void()> release,
                             ArrayMemory memory = ArrayMemory::host);

  /// Returns true when device's own memory is host memory that every call uses in place (a
  /// CPU device): host arrays need no copies there. CUDA and Vulkan devices map host memory for
  /// from_external too, but their kernels reach it over the bus, so their calls copy host arrays.
  static bool uses_host_memory(const Device& device);
  /// Returns the device of Runtime::global() whose memory is memory, with index within its
  /// backend: host memory → the CPU device (index 0 for the first), a CUDA device pointer →
  /// that GPU's CUDA device (its ordinal). Where a DLPack producer's tensor can be used in
  /// place. Throws invalid_argument for device_only, unavailable when no such device is here.
  static Device device_for(ArrayMemory memory, std::uint32_t index);

  /// Returns the device the array lives on.
  const Device& device() const;
  /// Returns the element type.
  DType dtype() const;
  /// Returns the dimensions, outermost first (empty for a 0-d array of one element).
  const Shape& shape() const;
  /// Returns the number of dimensions.
  std::size_t ndim() const { return shape().size(); }
  /// Returns the number of elements (the product of the shape; 1 for 0-d).
  std::uint64_t size() const;
  /// Returns the bytes the elements take (size() × dtype_size(dtype())).
  std::uint64_t nbytes() const;
  /// Returns the address of the first element for code outside vgpu (DLPack, CUDA interop), or
  /// null where memory() is device_only or the array has no elements. Valid while the array lives.
  void* data() const;
  /// Returns what data() points to.
  ArrayMemory memory() const;
  /// Returns true when the array uses memory the caller owns (from_external).
  bool external() const;
  /// Returns the device buffer holding the elements (empty for zero elements), for binding the
  /// array to a kernel of the same device with Device::bind.
  const Buffer& buffer() const;

  /// Copies every element to out (nbytes() bytes), after the work submitted before it finishes.
  /// Throws device_lost when the data was lost with its device.
  void read(void* out) const;
  /// Copies nbytes() bytes from data into the elements, in call order with the device's work.
  void write(const void* data);
  /// Returns a copy of the array on device (the same device: a copy on it; another one: through
  /// the host, the one explicit way data moves between devices).
  Array to(const Device& device) const;
  /// Returns a new array with a copy of the elements, on the same device.
  Array copy() const;
  /// Returns an array over the same elements with another shape of the same element count;
  /// throws invalid_argument naming both shapes otherwise.
  Array reshape(Shape shape) const;
  /// Returns "f32[2x3] on cpu:0".
  std::string describe() const;

  /// Returns true when the handle refers to an array.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }
  /// Returns true when both handles refer to the same elements, shape and dtype.
  friend bool operator==(const Array& a, const Array& b) noexcept { return a.state_ == b.state_; }

 private:
  explicit Array(std::shared_ptr<const detail::ArrayState> s) : state_(std::move(s)) {}
  const detail::ArrayState& state() const;
  std::shared_ptr<const detail::ArrayState> state_;
};

}  // namespace vgpu
