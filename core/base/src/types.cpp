// SPDX-License-Identifier: Apache-2.0
// core/base/src/types.cpp — names and sizes of the small public value types.
#include "vgpu/types.hpp"

#include "vgpu/backend_list.hpp"
#include "vgpu/half.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>

#include "vgpu/error.hpp"
#include "vgpu/tolerance.hpp"

namespace vgpu {

namespace {

// vgpu's own backends' names, indexed by their kinds' ids (to_string needs no lock for them),
// which is also the registry's order (core/runtime/device/registry.cpp; backend_names_test.py checks).
constexpr std::string_view kOwnNames[] = {"cuda", "vulkan", "opengl", "cpu"};
static_assert(std::size(kOwnNames) == BackendKind::cpu.id() + 1u);

// Backend names by kind id: vgpu's own four, then every other name BackendKind::named saw, in
// that order (a name's index is its kind's id). Names are never removed, so the views to_string
// returns stay valid for the life of the process.
struct BackendNames {
  BackendNames() {
    for (std::string_view n : kOwnNames) names.emplace_back(n);
  }
  std::mutex mutex;
  std::deque<std::string> names;
};

BackendNames& backend_names_table() {
  static auto* names = new BackendNames();  // never destroyed: views into it outlive static teardown
  return *names;
}

// The index of name in t (the id of its kind), or t.names.size() when it has none; t.mutex held.
std::size_t index_of(const BackendNames& t, std::string_view name) {
  return static_cast<std::size_t>(std::find(t.names.begin(), t.names.end(), name) - t.names.begin());
}

}  // namespace

BackendKind BackendKind::named(std::string_view name) {
  if (name.empty() || name.find_first_of(":, ") != std::string_view::npos)
    fail(ErrorCategory::invalid_argument,
         "backend name '" + std::string(name) + "' is empty or holds ':', ',' or a space.",
         "name the backend with a plain word (it forms device ids such as name:0).");
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  if (const std::size_t i = index_of(t, name); i < t.names.size()) return BackendKind(static_cast<std::uint16_t>(i));
  if (t.names.size() > 0xffff)
    fail(ErrorCategory::invalid_argument, "too many backend names (65536) in one process.",
         "name backends with a fixed set of names; a kind lasts as long as the process.");
  t.names.emplace_back(name);
  return BackendKind(static_cast<std::uint16_t>(t.names.size() - 1));
}

std::string_view to_string(BackendKind kind) noexcept {
  if (kind.builtin()) return kOwnNames[kind.id()];
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  return kind.id() < t.names.size() ? std::string_view(t.names[kind.id()]) : std::string_view("backend#?");
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

namespace {

// One row per dtype, in enum order: vgpu's name, numpy's, the element size.
struct DTypeRow {
  std::string_view name, numpy;
  std::size_t size;
};
constexpr std::array<DTypeRow, 8> kDTypes{{{"f32", "float32", 4},
                                           {"i32", "int32", 4},
                                           {"u32", "uint32", 4},
                                           {"f64", "float64", 8},
                                           {"i8", "int8", 1},
                                           {"u8", "uint8", 1},
                                           {"f16", "float16", 2},
                                           {"bf16", "bfloat16", 2}}};

}  // namespace

std::string_view to_string(DType dtype) noexcept {
  const auto i = static_cast<std::size_t>(dtype);
  return i < kDTypes.size() ? kDTypes[i].name : "unknown";
}

std::string_view numpy_name(DType dtype) noexcept {
  const auto i = static_cast<std::size_t>(dtype);
  return i < kDTypes.size() ? kDTypes[i].numpy : "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kDTypes.size(); ++i)
    if (name == kDTypes[i].name || name == kDTypes[i].numpy) return static_cast<DType>(i);
  return std::nullopt;
}

bool is_float(DType dtype) noexcept {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

namespace {

template <class T>
T load_as(const void* data, std::uint64_t index) noexcept {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + index * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void store_as(void* data, std::uint64_t index, T v) noexcept {
  std::memcpy(static_cast<unsigned char*>(data) + index * sizeof(T), &v, sizeof(T));
}

float half_to_float(std::uint16_t h) noexcept { return half_bits_to_float(h); }
std::uint16_t float_to_half(float f) noexcept { return float_to_half_bits(f); }
float bf16_to_float(std::uint16_t b) noexcept { return bf16_bits_to_float(b); }
std::uint16_t float_to_bf16(float f) noexcept { return float_to_bf16_bits(f); }

// value rounded once to the nearest 16-bit float (to even on a tie). Through float the value
// would be rounded twice, and a double just past a tie that float rounds onto the tie would
// then go the wrong way: the first rounding lands on the right bits or on their neighbour
// toward value, and the nearer of the two (exactly, in double) is the answer.
std::uint16_t narrow_once(double value, std::uint16_t (*narrow)(float), float (*widen)(std::uint16_t)) noexcept {
  const std::uint16_t h = narrow(static_cast<float>(value));
  const double got = widen(h);
  if (!std::isfinite(value) || !std::isfinite(got) || got == value) return h;
  // The neighbour toward value: one step of the bit pattern, away from or toward zero.
  const bool away = std::abs(value) > std::abs(got);
  if (!away && (h & 0x7fffu) == 0) return h;  // already zero: nothing nearer to zero
  const auto other = static_cast<std::uint16_t>(away ? h + 1 : h - 1);
  const double alt = widen(other);
  const double d_h = std::abs(value - got), d_o = std::abs(value - alt);
  if (d_o < d_h || (d_o == d_h && (other & 1u) == 0)) return other;
  return h;
}

// value as integer type T, as a C cast of the value truncated toward zero (wrapping modulo 2^bits).
template <class T>
T to_int(double value) noexcept {
  if (!std::isfinite(value)) return T{0};
  const double t = std::trunc(value);
  if (t >= -9.2e18 && t <= 9.2e18) return static_cast<T>(static_cast<std::int64_t>(t));
  return T{0};
}

}  // namespace

double element_value(DType dtype, const void* data, std::uint64_t index) noexcept {
  switch (dtype) {
    case DType::f32:
      return load_as<float>(data, index);
    case DType::i32:
      return load_as<std::int32_t>(data, index);
    case DType::u32:
      return load_as<std::uint32_t>(data, index);
    case DType::f64:
      return load_as<double>(data, index);
    case DType::i8:
      return load_as<std::int8_t>(data, index);
    case DType::u8:
      return load_as<std::uint8_t>(data, index);
    case DType::f16:
      return half_to_float(load_as<std::uint16_t>(data, index));
    case DType::bf16:
      return bf16_to_float(load_as<std::uint16_t>(data, index));
  }
  return 0;
}

void set_element_value(DType dtype, void* data, std::uint64_t index, double value) noexcept {
  switch (dtype) {
    case DType::f32:
      return store_as(data, index, static_cast<float>(value));
    case DType::i32:
      return store_as(data, index, to_int<std::int32_t>(value));
    case DType::u32:
      return store_as(data, index, to_int<std::uint32_t>(value));
    case DType::f64:
      return store_as(data, index, value);
    case DType::i8:
      return store_as(data, index, to_int<std::int8_t>(value));
    case DType::u8:
      return store_as(data, index, to_int<std::uint8_t>(value));
    case DType::f16:
      return store_as(data, index, narrow_once(value, float_to_half, half_to_float));
    case DType::bf16:
      return store_as(data, index, narrow_once(value, float_to_bf16, bf16_to_float));
  }
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
  const std::size_t i = index_of(t, name);  // one lookup, and no name is added
  if (i == t.names.size()) return std::nullopt;
  return BackendKind(static_cast<std::uint16_t>(i));
}

std::vector<std::string> backend_names() {
  BackendNames& t = backend_names_table();
  std::lock_guard lock(t.mutex);
  return {t.names.begin(), t.names.end()};
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

std::size_t dtype_size(DType dtype) noexcept {
  const auto i = static_cast<std::size_t>(dtype);
  return i < kDTypes.size() ? kDTypes[i].size : 0;
}

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
