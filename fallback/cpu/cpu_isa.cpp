// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_isa.cpp — run-time choice among the per-ISA kernel tables.
// Compiled with baseline flags: it must run on every CPU, including ones it then rejects.
#include "cpu_isa.hpp"

#include <string>

// xsimd 12+ defines XSIMD_INLINE, which xsimd_cpuid.hpp uses, in a header of its own
// (xsimd 8 has neither).
#if __has_include(<xsimd/config/xsimd_inline.hpp>)
#include <xsimd/config/xsimd_inline.hpp>
#endif
#include <xsimd/config/xsimd_cpuid.hpp>

#include "vgpu/config.hpp"
#include "vgpu/error.hpp"

namespace vgpu::cpu {
namespace {

/// One ISA the build contains and whether this machine can run it.
struct IsaOption {
  std::string_view name;
  const KernelTable& (*table)() noexcept;
  bool supported;
};

#if VGPU_CPU_X86_KERNELS

/// True when the CPU has the feature and the OS saves its registers. xsimd 8.1's detector
/// reads CPUID only (no XGETBV check of OS support), so libgcc's __builtin_cpu_supports, which
/// does check XCR0, confirms every bit it reports.
#define VGPU_CPU_HAS(feature) (__builtin_cpu_supports(feature) != 0)

std::vector<IsaOption> probe() {
  __builtin_cpu_init();
  const auto arch = xsimd::available_architectures();
  // SSE2 is part of x86-64 itself (and xsimd 8.1 reads its CPUID bit from the wrong register).
  // F16C too: the AVX2 unit converts float16 with it (-mf16c); every AVX2 CPU has it.
  const bool avx2 = arch.avx2 && arch.fma3_avx2 && VGPU_CPU_HAS("avx2") && VGPU_CPU_HAS("fma") && VGPU_CPU_HAS("f16c");
  // AVX-512CD too: the AVX-512 unit is compiled with -mavx512cd (xsimd 12+ require it for
  // avx512dq); every CPU with AVX-512BW has it.
  const bool avx512 = arch.avx512f && arch.avx512bw && arch.avx512dq && arch.avx512cd && VGPU_CPU_HAS("avx512f") &&
                      VGPU_CPU_HAS("avx512bw") && VGPU_CPU_HAS("avx512dq") && VGPU_CPU_HAS("avx512vl") &&
                      VGPU_CPU_HAS("avx512cd") && VGPU_CPU_HAS("fma");
  return {{"sse2", &sse2_kernels, true}, {"avx2", &avx2_kernels, avx2}, {"avx512", &avx512_kernels, avx512}};
}

#else

std::vector<IsaOption> probe() { return {{native_kernels().isa, &native_kernels, true}}; }

#endif

/// Returns the build's ISAs, worst first, probed once.
const std::vector<IsaOption>& options() {
  static const std::vector<IsaOption> all = probe();
  return all;
}

/// Returns "a, b, c" of the ISAs that pass filter.
template <class Filter>
std::string join_names(Filter filter) {
  std::string out;
  for (const IsaOption& o : options()) {
    if (!filter(o)) continue;
    if (!out.empty()) out += ", ";
    out += o.name;
  }
  return out;
}

/// Returns the option called name; throws invalid_argument when the build has no such ISA
/// and not_supported when this machine cannot run it. from_code: the name came from
/// RuntimeOptions::cpu_isa, else from VGPU_CPU_ISA (the messages name where).
const IsaOption& find_option(std::string_view name, bool from_code) {
  const std::string all = join_names([](const IsaOption&) { return true; });
  const std::string usable = join_names([](const IsaOption& o) { return o.supported; });
  const std::string origin = from_code ? "RuntimeOptions::cpu_isa=" : "VGPU_CPU_ISA=";
  const std::string unset = from_code ? "leave RuntimeOptions::cpu_isa unset" : "unset VGPU_CPU_ISA";
  for (const IsaOption& o : options()) {
    if (o.name != name) continue;
    if (!o.supported)
      fail(ErrorCategory::not_supported,
           origin + std::string(name) + " selects an instruction set this CPU (or its OS) does not support.",
           "use one this machine supports (" + usable + "), or " + unset + " to pick the best automatically.");
    return o;
  }
  fail(ErrorCategory::invalid_argument,
       origin + "'" + std::string(name) + "' is not an instruction set of vgpu's CPU backend.",
       "use one of " + all + " (this machine supports " + usable + "), or " + unset + ".");
}

}  // namespace

const KernelTable& resolve_kernels(std::string_view forced, bool from_code) {
  const IsaOption* best = &options().front();  // the baseline is always supported
  for (const IsaOption& o : options())
    if (o.supported) best = &o;
  if (forced.empty()) return best->table();
  try {
    return find_option(forced, from_code).table();
  } catch (const Error& e) {
    if (from_code) throw;
    if (e.category() == ErrorCategory::invalid_argument) {
      config_warning(e.problem() + " Using " + std::string(best->name) + " instead. Fix: " + e.fix());
      return best->table();
    }
    config_warning(std::string("the CPU backend is unavailable: ") + e.what());
    throw;
  }
}

std::string_view selected_isa() {
  // The process's choice (vgpu::config(), read once); a throwing resolve leaves it unset, so
  // the next call tries again.
  static const KernelTable& table = resolve_kernels(config().cpu_isa, false);
  return table.isa;
}

std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
#if VGPU_CPU_X86_KERNELS
  __builtin_cpu_init();
  // __builtin_cpu_supports needs literal names; the reported name follows xsimd's spelling.
#define VGPU_CPU_FEATURE(flag, name) \
  if (VGPU_CPU_HAS(flag)) out.emplace_back(name);
  VGPU_CPU_FEATURE("sse2", "sse2")
  VGPU_CPU_FEATURE("sse3", "sse3")
  VGPU_CPU_FEATURE("ssse3", "ssse3")
  VGPU_CPU_FEATURE("sse4.1", "sse4_1")
  VGPU_CPU_FEATURE("sse4.2", "sse4_2")
  VGPU_CPU_FEATURE("avx", "avx")
  VGPU_CPU_FEATURE("avx2", "avx2")
  VGPU_CPU_FEATURE("fma", "fma")
  VGPU_CPU_FEATURE("f16c", "f16c")
  VGPU_CPU_FEATURE("avx512f", "avx512f")
  VGPU_CPU_FEATURE("avx512cd", "avx512cd")
  VGPU_CPU_FEATURE("avx512dq", "avx512dq")
  VGPU_CPU_FEATURE("avx512bw", "avx512bw")
  VGPU_CPU_FEATURE("avx512vl", "avx512vl")
#undef VGPU_CPU_FEATURE
#else
  out.emplace_back(native_kernels().isa);
#endif
  return out;
}

}  // namespace vgpu::cpu
