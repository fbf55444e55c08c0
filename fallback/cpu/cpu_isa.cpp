// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/cpu_isa.cpp — run-time choice among the per-ISA kernel tables.
// Compiled with baseline flags: it must run on every CPU, including ones it then rejects.
#include "cpu_isa.hpp"

#include <string>
#include <utility>

// xsimd 12+ defines XSIMD_INLINE, which xsimd_cpuid.hpp uses, in a header of its own
// (xsimd 8 has neither).
#if __has_include(<xsimd/config/xsimd_inline.hpp>)
#include <xsimd/config/xsimd_inline.hpp>
#endif
#include <xsimd/config/xsimd_cpuid.hpp>

#include "vgpu/config.hpp"
#include "vgpu/error.hpp"
#include "vgpu/platform/system_info.hpp"

namespace vgpu::cpu {
namespace {

/// One ISA the build contains and whether this machine can run it.
struct IsaOption {
  std::string_view name;
  const KernelTable& (*table)() noexcept;
  bool supported;
};

#if VGPU_CPU_X86_KERNELS

std::vector<IsaOption> probe() {
  // Both detectors must agree: xsimd's (what its kernels assume) and the platform layer's
  // (cpuinfo), which also checks that the OS saves the registers (XGETBV), as xsimd 8.1's
  // CPUID-only detector does not.
  const auto arch = xsimd::available_architectures();
  const platform::CpuFeatures& has = platform::cpu_features();
  // SSE2 is part of x86-64 itself (and xsimd 8.1 reads its CPUID bit from the wrong register).
  // F16C too: the AVX2 unit converts float16 with it (-mf16c); every AVX2 CPU has it.
  const bool avx2 = arch.avx2 && arch.fma3_avx2 && has.x86_avx2 && has.x86_fma3 && has.x86_f16c;
  // AVX-512CD too: the AVX-512 unit is compiled with -mavx512cd (xsimd 12+ require it for
  // avx512dq); every CPU with AVX-512BW has it.
  const bool avx512 = arch.avx512f && arch.avx512bw && arch.avx512dq && arch.avx512cd && has.x86_avx512f &&
                      has.x86_avx512bw && has.x86_avx512dq && has.x86_avx512vl && has.x86_avx512cd && has.x86_fma3;
  return {{"portable", &portable_kernels, true},
          {"sse2", &sse2_kernels, true},
          {"avx2", &avx2_kernels, avx2},
          {"avx512", &avx512_kernels, avx512}};
}

#elif VGPU_CPU_NATIVE_KERNELS

std::vector<IsaOption> probe() {
  return {{"portable", &portable_kernels, true}, {native_kernels().isa, &native_kernels, true}};
}

#else

std::vector<IsaOption> probe() { return {{"portable", &portable_kernels, true}}; }

#endif

/// Returns the build's ISAs, worst first (the portable set, which every CPU runs), probed once.
const std::vector<IsaOption>& options() {
  static const std::vector<IsaOption> all = probe();
  return all;
}

/// Returns the best ISA this machine supports (the last supported: the list is worst first).
const IsaOption& best_option() {
  const IsaOption* best = &options().front();  // the portable set is always supported
  for (const IsaOption& o : options())
    if (o.supported) best = &o;
  return *best;
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
  const IsaOption* best = &best_option();
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
  const platform::CpuFeatures& has = platform::cpu_features();
  // The reported names follow xsimd's spelling.
  const std::pair<bool, const char*> known[] = {
      {has.x86_sse2, "sse2"},         {has.x86_sse3, "sse3"},         {has.x86_ssse3, "ssse3"},
      {has.x86_sse4_1, "sse4_1"},     {has.x86_sse4_2, "sse4_2"},     {has.x86_avx, "avx"},
      {has.x86_avx2, "avx2"},         {has.x86_fma3, "fma"},          {has.x86_f16c, "f16c"},
      {has.x86_avx512f, "avx512f"},   {has.x86_avx512cd, "avx512cd"}, {has.x86_avx512dq, "avx512dq"},
      {has.x86_avx512bw, "avx512bw"}, {has.x86_avx512vl, "avx512vl"}, {has.x86_avx512bf16, "avx512bf16"},
      {has.x86_amx_bf16, "amx_bf16"}, {has.arm_neon, "neon"},         {has.arm_fp16_arith, "fp16"},
      {has.arm_bf16, "bf16"}};
  for (const auto& [present, name] : known)
    if (present) out.emplace_back(name);
  // Where the platform layer cannot tell (an emulator), at least the kernels' own ISA.
  if (out.empty()) out.emplace_back(best_option().name);
  return out;
}

}  // namespace vgpu::cpu
