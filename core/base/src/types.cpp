// SPDX-License-Identifier: Apache-2.0
// core/base/src/types.cpp — names and sizes of the small public value types.
#include "vgpu/types.hpp"

#include "vgpu/backend_list.hpp"

#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>

#include "vgpu/error.hpp"
#include "vgpu/tolerance.hpp"

// register_backend_name is declared in the backend-author header vgpu/backend/backend_names.hpp,
// a layer above this one (docs/architecture.md, "Layers and targets"); it is defined here because
// it fills the table to_string reads. A signature that drifted from the header fails to link.

namespace vgpu {

namespace {

// vgpu's own backends' names, indexed by their BackendKind value (to_string needs no lock for them),
// which is also the registry's order (core/runtime/device/registry.cpp; backend_names_test.py checks).
constexpr std::string_view kOwnNames[] = {"cuda", "vulkan", "opengl", "cpu"};
static_assert(std::size(kOwnNames) == static_cast<std::size_t>(BackendKind::cpu) + 1);

// Backend names by kind: vgpu's own four, then those other backends registered. Names are
// never removed, so the views to_string returns stay valid for the life of the process.
struct BackendNames {
  BackendNames() {
    for (std::size_t i = 0; i < std::size(kOwnNames); ++i)
      names.emplace_back(static_cast<BackendKind>(i), std::string(kOwnNames[i]));
  }
  std::mutex mutex;
  std::deque<std::pair<BackendKind, std::string>> names;
  std::deque<std::string> unnamed;  // "backend#N" texts handed out for unregistered kinds
};

BackendNames& backend_names_table() {
  static auto* names = new BackendNames();  // never destroyed: views into it outlive static teardown
  return *names;
}

}  // namespace

std::string_view to_string(BackendKind kind) noexcept {
  if (kind <= BackendKind::cpu) return kOwnNames[static_cast<std::size_t>(kind)];
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  for (const auto& [k, name] : t.names)
    if (k == kind) return name;
  const std::string text = "backend#" + std::to_string(static_cast<int>(kind));
  for (const std::string& u : t.unnamed)
    if (u == text) return u;
  try {
    return t.unnamed.emplace_back(text);
  } catch (...) {
    return "backend#?";
  }
}

void register_backend_name(BackendKind kind, std::string_view name) {
  if (name.empty() || name.find_first_of(":, ") != std::string_view::npos)
    fail(ErrorCategory::invalid_argument,
         "backend name '" + std::string(name) + "' is empty or holds ':', ',' or a space.",
         "name the backend with a plain word (it forms device ids such as name:0).");
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  for (const auto& [k, n] : t.names) {
    if (k == kind && n == name) return;
    if (k == kind || n == name)
      fail(ErrorCategory::invalid_argument,
           "backend '" + std::string(name) + "' (kind " + std::to_string(static_cast<int>(kind)) +
               ") clashes with backend '" + n + "' (kind " + std::to_string(static_cast<int>(k)) + ").",
           "give each backend its own BackendKind value and name.");
  }
  t.names.emplace_back(kind, std::string(name));
}

std::string_view to_string(DeviceType type) noexcept {
  switch (type) {
    case DeviceType::discrete_gpu:
      return "discrete_gpu";
    case DeviceType::integrated_gpu:
      return "integrated_gpu";
    case DeviceType::virtual_gpu:
      return "virtual_gpu";
    case DeviceType::software:
      return "software";
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::other:
      return "other";
  }
  return "unknown";
}

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
    case DType::u32:
      return "u32";
  }
  return "unknown";
}

// In base, not in the runtime's selection code: the strict selection reader (selection_json.cpp,
// fuzzed on its own) reads these names.
const char* to_string(ResultCheck check) noexcept {
  switch (check) {
    case ResultCheck::unchecked:
      return "unchecked";
    case ResultCheck::passed:
      return "passed";
    case ResultCheck::wrong:
      return "wrong";
  }
  return "unknown";
}

std::string_view to_string(Access access) noexcept {
  switch (access) {
    case Access::read:
      return "read";
    case Access::write:
      return "write";
    case Access::read_write:
      return "read_write";
  }
  return "unknown";
}

std::optional<BackendKind> find_backend_kind(std::string_view name) noexcept {
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  for (const auto& [k, n] : t.names)
    if (n == name) return k;
  return std::nullopt;
}

std::vector<std::string> backend_names() {
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> names;
  for (const auto& [k, n] : t.names) names.push_back(n);
  return names;
}

std::string backend_name_list(std::string_view separator) {
  std::string list;
  for (const std::string& n : backend_names()) list += (list.empty() ? "" : std::string(separator)) + n;
  return list;
}

BackendKind parse_backend_kind(std::string_view name) {
  if (const auto kind = find_backend_kind(name)) return *kind;
  const std::string known = backend_name_list(", ");
  fail(ErrorCategory::invalid_argument, "unknown backend name '" + std::string(name) + "'.",
       "use one of " + known + " (as in VGPU_BACKEND=vulkan,cpu).");
}

std::size_t dtype_size(DType) noexcept { return 4; }  // every supported dtype is 32-bit

namespace {

constexpr const char* kSizeFix =
    "use smaller sizes: a tensor's element count and its size in bytes must fit in 64 bits (and in the device's "
    "buffer limit); split the work into parts.";

[[noreturn]] void fail_shape(const Shape& shape, const std::string& what) {
  fail(ErrorCategory::invalid_argument,
       "shape " + to_string(shape) + " has " + what + " than 64 bits can count (18446744073709551615).", kSizeFix);
}

}  // namespace

std::uint64_t element_count(const Shape& shape) {
  for (auto d : shape)
    if (d == 0) return 0;  // empty however large the other dimensions are
  std::uint64_t n = 1;
  for (auto d : shape)
    if (__builtin_mul_overflow(n, d, &n)) fail_shape(shape, "more elements");
  return n;
}

std::uint64_t tensor_bytes(const Shape& shape, DType dtype) {
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(element_count(shape), std::uint64_t{dtype_size(dtype)}, &bytes))
    fail_shape(shape, "more bytes of " + std::string(to_string(dtype)) + " elements");
  return bytes;
}

namespace {

// The one overflow error of checked_mul and checked_add: what is "a op b".
[[noreturn]] void fail_overflow(std::string_view what, std::uint64_t a, std::string_view op, std::uint64_t b) {
  fail(ErrorCategory::invalid_argument,
       std::string(what) + " is " + std::to_string(a) + std::string(op) + std::to_string(b) +
           ", more than 64 bits can count (18446744073709551615).",
       kSizeFix);
}

}  // namespace

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail_overflow(what, a, " × ", b);
  return r;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail_overflow(what, a, " + ", b);
  return r;
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
