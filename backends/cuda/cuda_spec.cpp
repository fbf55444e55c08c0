// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_spec.cpp — spec constants → NVRTC macros.
#include "cuda_spec.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "vgpu/error.hpp"

namespace vgpu::cuda {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

std::string cuda_literal(const SpecValue& value) {
  switch (value.type) {
    case SpecValue::Type::boolean:
      return value.bits ? "1" : "0";
    case SpecValue::Type::i32: {
      const auto v = static_cast<std::int32_t>(value.bits);
      // INT_MIN has no literal of its own (the minus applies to a too-large positive one).
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
    }
    case SpecValue::Type::u32:
      return std::to_string(value.bits) + "u";
    case SpecValue::Type::f32: {
      float f = 0;
      std::memcpy(&f, &value.bits, 4);
      char buf[64];
      if (!std::isfinite(f)) {
        std::snprintf(buf, sizeof buf, "(__int_as_float(0x%08x))", value.bits);
        return buf;
      }
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));  // 9 digits round-trip a float
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      s += "f";
      return f < 0 ? "(" + s + ")" : s;
    }
  }
  return "0";
}

std::vector<std::string> spec_defines(const std::string& kernel, const CompileOptions& options) {
  std::vector<std::string> out;
  for (const SpecConstant& c : options.spec_constants) {
    if (c.id)
      fail(ErrorCategory::not_supported,
           "CUDA kernel '" + kernel + "' sets specialization constant id " + std::to_string(*c.id) +
               ", but CUDA C has no constant ids.",
           "set it by name (CompileOptions::specialize(\"NAME\", value)): CUDA gets it as the macro -DNAME=value.");
    if (!is_identifier(c.name))
      fail(ErrorCategory::invalid_argument,
           "CUDA kernel '" + kernel + "' sets specialization constant '" + c.name + "', which is no C identifier.",
           "name it as the macro the CUDA source reads (letters, digits and _, not starting with a digit).");
    if (options.defines.count(c.name) || c.name.rfind("VGPU_LOCAL_SIZE_", 0) == 0)
      fail(ErrorCategory::invalid_argument,
           "CUDA kernel '" + kernel + "' sets '" + c.name + "' both as a specialization constant and as a define" +
               (options.defines.count(c.name) ? "." : " vgpu sets itself (the local size)."),
           "set it one way only (spec_constants or defines); the local size comes from workgroup_size.");
    out.push_back("-D" + c.name + "=" + cuda_literal(c.value));
  }
  return out;
}

}  // namespace vgpu::cuda
