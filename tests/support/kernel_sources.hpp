// SPDX-License-Identifier: Apache-2.0
// tests/support/kernel_sources.hpp — the one place where tests write and read the dialect
// entries of a vgpu::KernelSource (a list of DialectSource entries, one per dialect). Tests
// build sources through these helpers so that a change of how a source stores its dialects
// touches this header alone.
#pragma once

#include <string>
#include <utility>

#include "vgpu/kernel_source.hpp"

namespace vgpu_test {

/// Sets the GLSL body (Vulkan and OpenGL) of s.
inline void set_glsl(vgpu::KernelSource& s, std::string body) { s.add_glsl(std::move(body)); }

/// Sets the CUDA C source of s and its extern "C" entry point.
inline void set_cuda(vgpu::KernelSource& s, std::string code, std::string entry) {
  s.add_cuda(std::move(code), std::move(entry));
}

/// Sets the CPU dialect of s to the user callable fn, whose behaviour version (part of the cache
/// key) is version; replaces any built-in CPU kernel s named.
inline void set_cpu(vgpu::KernelSource& s, vgpu::CpuKernelFn fn, std::string version) {
  s.add_cpu(std::move(fn), std::move(version));
}

/// Sets the CPU dialect of s to the CPU backend's built-in kernel name, at version.
inline void set_cpu_builtin(vgpu::KernelSource& s, std::string name, std::string version) {
  s.add_cpu_builtin(std::move(name), std::move(version));
}

/// Removes the CPU dialect from s (the CPU backend then refuses it with not_supported).
inline void clear_cpu(vgpu::KernelSource& s) { s.remove(vgpu::dialect::cpu); }

namespace detail {
// The entry of dialect d in s, or an empty one (whose fields read as "").
inline const vgpu::DialectSource& entry_of(const vgpu::KernelSource& s, std::string_view d) {
  static const vgpu::DialectSource none;
  const vgpu::DialectSource* e = s.find(d);
  return e ? *e : none;
}
}  // namespace detail

/// Returns the GLSL body of s ("" when it has none).
inline const std::string& glsl_of(const vgpu::KernelSource& s) { return detail::entry_of(s, vgpu::dialect::glsl).code; }

/// Returns the CUDA C source of s ("" when it has none).
inline const std::string& cuda_of(const vgpu::KernelSource& s) { return detail::entry_of(s, vgpu::dialect::cuda).code; }

/// Returns the CUDA entry point of s ("" when it has none).
inline const std::string& cuda_entry_of(const vgpu::KernelSource& s) {
  return detail::entry_of(s, vgpu::dialect::cuda).entry;
}

/// Returns the name of the CPU built-in s uses ("" for a callable or no CPU dialect).
inline const std::string& cpu_builtin_of(const vgpu::KernelSource& s) {
  const vgpu::DialectSource& e = detail::entry_of(s, vgpu::dialect::cpu);
  static const std::string none;
  return e.fn ? none : e.entry;
}

/// Returns the version of the CPU dialect of s.
inline const std::string& cpu_version_of(const vgpu::KernelSource& s) {
  return detail::entry_of(s, vgpu::dialect::cpu).version;
}

/// Returns whether s has a CPU dialect (a callable or a built-in).
inline bool has_cpu(const vgpu::KernelSource& s) { return s.find(vgpu::dialect::cpu) != nullptr; }

}  // namespace vgpu_test
