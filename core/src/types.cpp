// core/src/types.cpp — names and sizes of the small public value types.
#include "vgpu/types.hpp"

#include <string>

#include "vgpu/error.hpp"

namespace vgpu {

std::string_view to_string(BackendKind kind) noexcept {
  switch (kind) {
    case BackendKind::cuda: return "cuda";
    case BackendKind::vulkan: return "vulkan";
    case BackendKind::opengl: return "opengl";
    case BackendKind::cpu: return "cpu";
    case BackendKind::test: return "test";
  }
  return "unknown";
}

std::string_view to_string(DeviceType type) noexcept {
  switch (type) {
    case DeviceType::discrete_gpu: return "discrete_gpu";
    case DeviceType::integrated_gpu: return "integrated_gpu";
    case DeviceType::virtual_gpu: return "virtual_gpu";
    case DeviceType::software: return "software";
    case DeviceType::cpu: return "cpu";
    case DeviceType::other: return "other";
  }
  return "unknown";
}

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
  }
  return "unknown";
}

std::string_view to_string(Access access) noexcept {
  switch (access) {
    case Access::read: return "read";
    case Access::write: return "write";
    case Access::read_write: return "read_write";
  }
  return "unknown";
}

BackendKind parse_backend_kind(std::string_view name) {
  for (BackendKind k : {BackendKind::cuda, BackendKind::vulkan, BackendKind::opengl, BackendKind::cpu, BackendKind::test})
    if (name == to_string(k)) return k;
  fail(ErrorCategory::invalid_argument, "unknown backend name '" + std::string(name) + "'.",
       "use one of cuda, vulkan, opengl, cpu (as in VGPU_BACKEND=vulkan,cpu).");
}

std::size_t dtype_size(DType) noexcept { return 4; }  // every supported dtype is 32-bit

std::uint64_t element_count(const Shape& shape) noexcept {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace vgpu
