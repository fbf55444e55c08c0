// SPDX-License-Identifier: Apache-2.0
// core/base/src/kernel_source.cpp — finding and adding a kernel's dialect entries.
#include "vgpu/kernel_source.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace vgpu {

const DialectSource* KernelSource::find(std::string_view d) const noexcept {
  for (const DialectSource& s : sources)
    if (s.dialect == d) return s.present() ? &s : nullptr;
  return nullptr;
}

const DialectSource* KernelSource::pick(std::span<const std::string> preferred) const noexcept {
  for (const std::string& d : preferred)
    if (const DialectSource* s = find(d)) return s;
  return nullptr;
}

KernelSource& KernelSource::add(DialectSource entry) {
  auto same =
      std::find_if(sources.begin(), sources.end(), [&](const DialectSource& s) { return s.dialect == entry.dialect; });
  if (same != sources.end())
    *same = std::move(entry);
  else
    sources.push_back(std::move(entry));
  return *this;
}

KernelSource& KernelSource::remove(std::string_view d) {
  std::erase_if(sources, [&](const DialectSource& s) { return s.dialect == d; });
  return *this;
}

KernelSource& KernelSource::add_glsl(std::string code) {
  return add(DialectSource{std::string(dialect::glsl), std::move(code), {}, {}, {}});
}

KernelSource& KernelSource::add_glsl_shader(std::string text, std::string entry) {
  return add(DialectSource{std::string(dialect::glsl_shader), std::move(text), std::move(entry), {}, {}});
}

KernelSource& KernelSource::add_spirv(std::span<const std::uint32_t> words, std::string entry) {
  std::string bytes(words.size() * 4, '\0');
  if (!words.empty()) std::memcpy(bytes.data(), words.data(), bytes.size());
  return add(DialectSource{std::string(dialect::spirv), std::move(bytes), std::move(entry), {}, {}});
}

KernelSource& KernelSource::add_cuda(std::string code, std::string entry) {
  return add(DialectSource{std::string(dialect::cuda), std::move(code), std::move(entry), {}, {}});
}

KernelSource& KernelSource::add_cpu(CpuKernelFn fn, std::string version) {
  return add(DialectSource{std::string(dialect::cpu), {}, {}, std::move(fn), std::move(version)});
}

KernelSource& KernelSource::add_cpu_builtin(std::string builtin, std::string version) {
  return add(DialectSource{std::string(dialect::cpu), {}, std::move(builtin), {}, std::move(version)});
}

CompileOptions& CompileOptions::set_spec(SpecConstant c) {
  auto same = std::find_if(spec_constants.begin(), spec_constants.end(),
                           [&](const SpecConstant& s) { return c.id ? s.id == c.id : (!s.id && s.name == c.name); });
  if (same != spec_constants.end())
    *same = std::move(c);
  else
    spec_constants.push_back(std::move(c));
  return *this;
}

std::string SpecValue::describe() const {
  switch (type) {
    case Type::boolean:
      return bits ? "true" : "false";
    case Type::i32:
      return std::to_string(static_cast<std::int32_t>(bits));
    case Type::u32:
      return std::to_string(bits) + "u";
    case Type::f32: {
      float f;
      std::memcpy(&f, &bits, 4);
      char text[32];
      std::snprintf(text, sizeof text, "%.9gf", static_cast<double>(f));
      return text;
    }
  }
  return "?";
}

}  // namespace vgpu
