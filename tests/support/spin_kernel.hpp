// SPDX-License-Identifier: Apache-2.0
// tests/support/spin_kernel.hpp — a kernel that keeps a GPU busy for as long as a test needs
// (its loop count comes from the params), in GLSL and CUDA C, with a checked host reference and
// a measurement of the work that takes about a given time on a device. Used by the GPU timeout
// suite (gpu_timeout_test.cpp) and the locking suite (locking_test.cpp).
#pragma once

#include "support/catch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/kernel_sources.hpp"
#include "support/timing.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
/// How much the spin kernel does: every one of groups × 64 invocations runs rounds rounds of 16
/// xorshift32 steps (a chain no compiler can fold).
struct Work {
  std::uint64_t rounds = 1;
  std::uint32_t groups = 1;
};

/// The params block: n = invocations, rounds = outer × inner (two loops, so that a GPU can run
/// up to 65535 × 65535 rounds; llvmpipe and lavapipe end an invocation's loops after 65535
/// iterations in all, so there rounds stay below that and groups make the work long).
struct SpinParams {
  std::uint32_t n, outer, inner, pad0;
};

inline constexpr std::uint32_t kGroupSize = 64;

inline SpinParams params_of(const Work& w) {
  const std::uint64_t inner = std::clamp<std::uint64_t>(w.rounds, 1, 60000);
  const std::uint64_t outer = std::clamp<std::uint64_t>((w.rounds + inner - 1) / inner, 1, 65535);
  return SpinParams{w.groups * kGroupSize, static_cast<std::uint32_t>(outer), static_cast<std::uint32_t>(inner), 0};
}

/// data[i] = 16 × outer × inner xorshift32 steps of data[i].
inline vgpu::KernelSource spin_source() {
  const std::string round = "x ^= x << 13; x ^= x >> 17; x ^= x << 5; ";
  std::string rounds16;
  for (int i = 0; i < 16; ++i) rounds16 += round;
  vgpu::KernelSource s;
  s.name = "test.spin";
  set_glsl(s,
           "VGPU_PARAMS { uint n; uint outer; uint inner; uint pad0; } p;\n"
           "layout(std430, binding = 0) buffer Data { uint data[]; };\n"
           "void main() {\n"
           "  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n"
           "  if (i >= p.n) return;\n"
           "  uint x = data[i];\n"
           "  for (uint o = 0u; o < p.outer; ++o)\n"
           "    for (uint k = 0u; k < p.inner; ++k) { " +
               rounds16 +
               "}\n"
               "  data[i] = x;\n"
               "}\n");
  set_cuda(s,
           "struct SpinParams { unsigned n, outer, inner, pad0; };\n"
           "extern \"C\" __global__ void spin(unsigned* data, SpinParams p) {\n"
           "  const unsigned i = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;\n"
           "  if (i >= p.n) return;\n"
           "  unsigned x = data[i];\n"
           "  for (unsigned o = 0; o < p.outer; ++o)\n"
           "    for (unsigned k = 0; k < p.inner; ++k) { " +
               rounds16 +
               "}\n"
               "  data[i] = x;\n"
               "}\n",
           "spin");
  s.params_size = sizeof(SpinParams);
  s.bindings = {
      {0, vgpu::Access::read_write, "data", [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
         return std::uint64_t{pb.as<SpinParams>().n} * 4;
       }}};
  return s;
}

inline vgpu::CompileOptions spin_options() {
  vgpu::CompileOptions o;
  o.workgroup_size = {kGroupSize, 1, 1};
  return o;
}

inline std::vector<std::uint32_t> spin_input(std::uint32_t n) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = 0x9E3779B9u * (i + 1);
  return v;
}

inline std::vector<std::uint32_t> spin_reference(std::vector<std::uint32_t> v, const SpinParams& p) {
  const std::uint64_t steps = std::uint64_t{p.outer} * p.inner * 16;
  for (auto& x : v)
    for (std::uint64_t k = 0; k < steps; ++k) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
    }
  return v;
}

/// The largest work a test uses: its buffer holds this many groups.
inline constexpr std::uint32_t kMaxGroups = 65535;

/// One spin kernel with its buffer and binding set on a device.
struct Spin {
  vgpu::Device device;
  vgpu::Kernel kernel;
  vgpu::Buffer data;
  vgpu::BindingSet set;

  explicit Spin(vgpu::Device d, std::uint32_t max_groups = kMaxGroups) : device(std::move(d)) {
    kernel = device.compile(spin_source(), spin_options());
    data = device.create_buffer(std::uint64_t{max_groups} * kGroupSize * 4);
    set = device.bind(kernel, {{0, data}});
  }
  /// Uploads the input and dispatches w (returns without waiting).
  void start(const Work& w) {
    const SpinParams p = params_of(w);
    const std::vector<std::uint32_t> in = spin_input(p.n);
    device.write(data, in.data(), std::uint64_t{p.n} * 4);
    device.dispatch(kernel, set, vgpu::ParamsBlock::of(p), {w.groups, 1, 1});
  }
  /// Reads the result of w back (waiting for the dispatch within the device's limit).
  std::vector<std::uint32_t> result(const Work& w) {
    std::vector<std::uint32_t> out(params_of(w).n);
    device.read(data, out.data(), out.size() * 4);
    return out;
  }
  /// Runs w and returns its wall time.
  double time(const Work& w) {
    const auto t0 = Clock::now();
    start(w);
    result(w);
    return seconds_since(t0);
  }
  /// Runs small work w and checks the result against the host.
  void check(const Work& w) {
    INFO("spin " << w.groups << " groups x " << w.rounds << " rounds");
    start(w);
    CHECK(result(w) == spin_reference(spin_input(params_of(w).n), params_of(w)));
  }
};

inline bool is_llvmpipe(const vgpu::DeviceInfo& info) { return info.name.find("llvmpipe") != std::string::npos; }

/// Work that keeps this device busy for about seconds: rounds grow first (up to what the device
/// runs per invocation: 50000 on llvmpipe), then groups; the last doubling that took over 50 ms
/// is scaled linearly to the target (measured as the time of the extra work, so fixed costs do
/// not count, within 4x of the doubled call's own time), rounds first and what their cap leaves
/// as more groups: on a busy machine the doubling passes 50 ms while rounds still grow, and
/// capping the rounds alone made a "4 s" runaway of one group that ended before the limits it
/// tests (issue 29).
inline Work work_for(vgpu::Device device, double seconds) {
  Spin spin(std::move(device));
  spin.check({10, 1});   // compiles, warms up, and proves the kernel right
  spin.check({300, 3});  // several groups
  const std::uint64_t max_rounds = is_llvmpipe(spin.device.info()) ? 50000 : std::uint64_t{65535} * 60000;
  Work w{1024, 1};
  for (;;) {
    const bool grow_rounds = w.rounds * 2 <= max_rounds;
    Work twice = w;
    if (grow_rounds)
      twice.rounds *= 2;
    else
      twice.groups *= 2;
    const double base = spin.time(w), more = spin.time(twice);
    if (more > 0.05 || twice.groups * 2 > kMaxGroups) {
      // The time of one w: the extra work's (fixed costs do not count), yet at least an eighth
      // of the doubled call's, so at most 4x what the whole call shows: on a busy machine the
      // two times are noisy, and a near-zero difference once sized a "4 s" runaway of hours.
      const double per_w = std::max(more - base, more / 8);
      const double scale = std::max(1.0, (seconds - base) / per_w + 1.0);  // in units of w
      Work target = w;
      if (grow_rounds) {
        const double rounds = double(w.rounds) * scale;
        target.rounds = std::min<std::uint64_t>(max_rounds, static_cast<std::uint64_t>(rounds));
        target.groups = static_cast<std::uint32_t>(
            std::min<double>(kMaxGroups, std::ceil(double(w.groups) * rounds / double(target.rounds))));
      } else
        target.groups = static_cast<std::uint32_t>(std::min<double>(kMaxGroups, double(w.groups) * scale));
      return target;
    }
    w = twice;
  }
}

}  // namespace vgpu_test
