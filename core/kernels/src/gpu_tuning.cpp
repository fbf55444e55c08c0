// SPDX-License-Identifier: Apache-2.0
// core/kernels/src/gpu_tuning.cpp — the GPU built-ins' workgroup sizes, defines and work per group.
#include "vgpu/kernels/gpu_tuning.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <string>

#include "vgpu/config.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/coopmat_tuning.hpp"

namespace vgpu::kernels {
namespace {

// One op of core/kernels/glsl (and its CUDA port): workgroup size, the work one group covers
// (x: elements, C columns or a reduce block; y: C rows) and the VGPU_OP value elementwise.comp
// takes (null: none).
struct Row {
  std::string_view op;
  std::array<std::uint32_t, 3> workgroup;
  std::uint64_t per_x, per_y;
  const char* vgpu_op;
};

constexpr Row kRows[] = {
    {"matmul", {16, 16, 1}, 64, 64, nullptr},  // 64×64 C tile, 4×4 per invocation
    {"axpy", {256, 1, 1}, 256, 1, nullptr},
    {"add", {256, 1, 1}, 256, 1, "0"},
    {"mul", {256, 1, 1}, 256, 1, "1"},
    {"reduce_sum", {256, 1, 1}, 256 * 8, 1, nullptr},  // 8 inputs per invocation per pass
    {"softmax_rows", {256, 1, 1}, 1, 1, nullptr},      // one group per row
    {"convert", {256, 1, 1}, 512, 1, nullptr},         // two elements (one 32-bit word) per invocation
};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

constexpr GlslMatmulTiling tiled(std::uint32_t bm, std::uint32_t bn, std::uint32_t bk, std::uint32_t tm,
                                 std::uint32_t tn) {
  return GlslMatmulTiling{bm, bn, bk, tm, tn, false};
}

constexpr GlslMatmulTiling kNaive{};
constexpr GlslMatmulTiling kT128x128{tiled(128, 128, 8, 8, 8)}, kT128x128k16{tiled(128, 128, 16, 8, 8)},
    kT128x64{tiled(128, 64, 8, 8, 4)}, kT64x64{tiled(64, 64, 16, 4, 4)}, kT32x32{tiled(32, 32, 16, 4, 4)};
// Keep in step with VGPU_GLSL_PRECOMPILED (cmake/VgpuGlsl.cmake): every entry must be in L3.
constexpr GlslMatmulTiling kTilings[] = {kNaive, kT32x32, kT64x64, kT128x64, kT128x128, kT128x128k16};

// kernels::set_software_candidates (tests only): software devices offer matmul candidates too.
std::atomic<bool> g_software_candidates{false};

// Below this much work (m·n·k) the tiling matters too little to be worth measuring: the rule stands.
constexpr std::uint64_t kMeasureWork = 256ull * 256 * 256;
constexpr std::size_t kMaxCandidates = 4;

std::uint64_t tiling_units(const DeviceInfo& device);

// c's tuning with the longest K slice device's loop limit allows (0: no limit); throws
// invalid_argument when not even one step of K fits.
OpTuning bounded(const GlslMatmulTiling& c, const DeviceInfo& device) {
  OpTuning t = c.tuning();
  const std::uint64_t budget = loop_budget(device);
  if (budget == 0) return t;
  t.max_k_slice = c.max_k_slice(budget);
  if (t.max_k_slice == 0)
    fail(ErrorCategory::invalid_argument,
         "the GLSL matmul variant " + c.name() + " runs more loop iterations per invocation than " + device.id() +
             "'s driver allows (DeviceLimits::max_loop_iterations = " +
             std::to_string(device.limits.max_loop_iterations) + ").",
         "run matmul on a device without such a low loop limit, or force another tiling (VGPU_MATMUL_TILING).");
  return t;
}

class GpuBuiltinTuner final : public OpTuner {
 public:
  explicit GpuBuiltinTuner(std::string forced) : forced_(std::move(forced)) {}
  OpTuning tune(const OpShape& shape, const DeviceInfo& device) const override {
    if (shape.op != "matmul") return builtin_gpu_tuning(shape);
    if (coopmat(shape, device)) {
      if (forced_coopmat()) {
        const GlslCoopMatrixTiling c = glsl_coopmat_tiling(forced_);
        require_fits(c, device);
        return c.tuning();
      }
      return glsl_coopmat_choice(shape.m, shape.n, tiling_units(device), device).tuning();
    }
    // VGPU_MATMUL_TILING naming a cooperative-matrix tiling forces float16 matmuls only.
    const bool forced = !forced_.empty() && !forced_coopmat();
    // Parsed per plan so that a bad VGPU_MATMUL_TILING fails matmul with its message, not device discovery.
    const GlslMatmulTiling c =
        forced ? glsl_matmul_tiling(forced_) : glsl_matmul_choice(shape.m, shape.k, shape.n, device);
    require_fits(c, device);
    OpTuning t = bounded(c, device);
    if (!c.naive) t.split_k = glsl_matmul_split_k(shape.m, shape.k, shape.n, device);
    return t;
  }

  // The same GLSL through two compilers (Vulkan, OpenGL on the H200) wants different tiles, so
  // on GPUs the tiled variants that fit and give a grid of a useful size are offered for
  // measuring. One candidate where the rule is certain: forced, split-K, naive, little work,
  // or a software device (whose rules were measured; tests opt in).
  std::vector<OpTuning> candidates(const OpShape& shape, const DeviceInfo& device) const override {
    OpTuning first = tune(shape, device);
    if (shape.op != "matmul" || !forced_.empty() || first.split_k > 1) return {first};
    if (coopmat(shape, device)) {
      // Every cooperative-matrix tiling whose grid gives a quarter of the units work or more.
      std::vector<OpTuning> out{first};
      if (shape.m * shape.k * shape.n < kMeasureWork) return out;
      for (const GlslCoopMatrixTiling& c : glsl_coopmat_tilings())
        if (c.name() != first.variant && c.fits(device) &&
            fills_quarter(c.grid(shape.m, shape.n), tiling_units(device)))
          out.push_back(c.tuning());
      return out;
    }
    const GlslMatmulTiling rule = glsl_matmul_choice(shape.m, shape.k, shape.n, device);
    if (rule.naive) return {first};
    const bool software = device.type == DeviceType::software || device.type == DeviceType::cpu;
    const bool opted_in = g_software_candidates.load(std::memory_order_relaxed);
    if (software && !opted_in) return {first};
    if (!opted_in && shape.m * shape.k * shape.n < kMeasureWork) return {first};
    std::vector<OpTuning> out{first};
    const std::uint64_t units = software ? 1 : tiling_units(device);
    for (const GlslMatmulTiling& c : {kT128x128, kT128x128k16, kT128x64, kT64x64, kT32x32}) {
      if (out.size() >= kMaxCandidates) break;
      if (c == rule || !c.fits(device)) continue;
      if (!fills_quarter(ceil_div(shape.m, c.bm) * ceil_div(shape.n, c.bn), units)) continue;
      out.push_back(bounded(c, device));
    }
    return out;
  }

 private:
  // Float16 matmuls run on cooperative matrices where the device has them (Vulkan).
  static bool coopmat(const OpShape& shape, const DeviceInfo& device) {
    return shape.op == "matmul" && shape.dtype == DType::f16 && has_coopmat_f16(device);
  }
  bool forced_coopmat() const { return is_coopmat_tiling_name(forced_); }
  // A grid under a quarter of the compute units leaves most of the GPU idle: not worth a run.
  static bool fills_quarter(std::uint64_t grid, std::uint64_t units) { return grid * 4 >= units; }
  // Throws invalid_argument when tiling c (GLSL or cooperative-matrix) does not fit device.
  template <class Tiling>
  static void require_fits(const Tiling& c, const DeviceInfo& device) {
    if (c.fits(device)) return;
    fail(ErrorCategory::invalid_argument,
         "VGPU_MATMUL_TILING=" + c.name() + " needs " + std::to_string(c.shared_bytes()) +
             " bytes of shared memory or more invocations per workgroup than " + device.id() + " has (" +
             std::to_string(device.limits.max_shared_memory_bytes) + " bytes, " +
             std::to_string(device.limits.max_workgroup_invocations) + " invocations).",
         "pick a smaller tiling (vgpu-probe shows the limits), or unset VGPU_MATMUL_TILING.");
  }
  std::string forced_;
};

}  // namespace

std::string GlslMatmulTiling::name() const {
  if (naive) return "naive";
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "x" + std::to_string(tm) + "x" +
         std::to_string(tn);
}

OpTuning GlslMatmulTiling::tuning() const {
  OpTuning t;
  t.variant = name();
  t.per_group_x = bn;
  t.per_group_y = bm;
  if (naive) {
    t.options.workgroup_size = {16, 16, 1};
    t.options.defines = {{"VGPU_MM_NAIVE", "1"}};
    return t;
  }
  t.options.workgroup_size = {bn / tn, bm / tm, 1};
  // The plain kernel's defaults are 64x64x16x4x4: that variant carries no defines, so it keeps
  // the L1/L2/L3 keys it has always had.
  if (*this == kT64x64) return t;
  t.options.defines = {{"VGPU_MM_BM", std::to_string(bm)},
                       {"VGPU_MM_BN", std::to_string(bn)},
                       {"VGPU_MM_BK", std::to_string(bk)},
                       {"VGPU_MM_TM", std::to_string(tm)},
                       {"VGPU_MM_TN", std::to_string(tn)}};
  return t;
}

std::uint64_t GlslMatmulTiling::shared_bytes() const {
  if (naive) return 0;
  return 4ull * 2 * bk * (bm + 4) + 4ull * 2 * bk * bn;  // As[2][BK][BM + 4], Bs[2][BK][BN]
}

// matmul.comp's loops, each counted as if the compiler unrolled none (drivers differ in what they
// unroll; gallivm did not unroll the BK loop of 64x64x16x4x4) and one more than its iterations
// for its exit test (gallivm counts that too); a loop skipped by a branch counts one.
std::uint64_t GlslMatmulTiling::loops_per_step() const {
  if (naive) return 1;  // one K element per iteration of its one loop
  const std::uint64_t threads = std::uint64_t{bm / tm} * (bn / tn);
  const std::uint64_t a_loads = ceil_div(std::uint64_t{bm} * bk / 4, threads),
                      b_loads = ceil_div(std::uint64_t{bk} * bn / 4, threads);
  const std::uint64_t tiles = (a_loads + 1) + (b_loads + 1);  // load_tiles or store_tiles, once each per step
  // Per step: the step loop's own iteration, the next step's loads and stores (run or skipped),
  // and BK iterations of kk, each with its b, g and h loops.
  return 1 + 2 * tiles + (bk + 1) + std::uint64_t{bk} * ((tn / 4 + 1) + (tm / 4 + 1) + (tm / 4) * (tn / 4 + 1));
}

std::uint64_t GlslMatmulTiling::loops_fixed() const {
  if (naive) return 1;  // the exit test of its loop
  const std::uint64_t threads = std::uint64_t{bm / tm} * (bn / tn);
  const std::uint64_t a_loads = ceil_div(std::uint64_t{bm} * bk / 4, threads),
                      b_loads = ceil_div(std::uint64_t{bk} * bn / 4, threads);
  const std::uint64_t init = (tm + 1) + std::uint64_t{tm} * (tn / 4 + 1);                       // acc = 0
  const std::uint64_t first = 2 * ((a_loads + 1) + (b_loads + 1));                              // step 0's tiles
  const std::uint64_t store = (tm / 4 + 1) + (tm / 4) * (5 + std::uint64_t{4} * (tn / 4 + 1));  // C
  return init + first + store + 1;  // + the step loop's exit test
}

std::uint32_t GlslMatmulTiling::max_k_slice(std::uint64_t budget) const {
  if (budget <= loops_fixed()) return 0;
  const std::uint64_t steps = (budget - loops_fixed()) / loops_per_step();
  // The plan slices K in multiples of 16 (a multiple of every BK).
  const std::uint64_t slice = steps * (naive ? 1 : bk) / 16 * 16;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(slice, 0xFFFFFFF0u));
}

std::uint64_t loop_budget(const DeviceInfo& device) {
  // Some room for loops a compiler may add or count differently than the kernels' own count.
  const std::uint64_t limit = device.limits.max_loop_iterations;
  return limit - limit / 64;
}

bool GlslMatmulTiling::fits(const DeviceInfo& device) const {
  const std::uint64_t limit = device.limits.max_shared_memory_bytes;
  const std::uint64_t invocations = naive ? 256 : std::uint64_t{bm / tm} * (bn / tn);
  return (limit == 0 || shared_bytes() <= limit) && invocations <= device.limits.max_workgroup_invocations;
}

std::span<const GlslMatmulTiling> glsl_matmul_tilings() { return kTilings; }

GlslMatmulTiling glsl_matmul_tiling(std::string_view name) {
  std::string known;
  for (const GlslMatmulTiling& t : kTilings) {
    if (t.name() == name) return t;
    known += (known.empty() ? "" : ", ") + t.name();
  }
  fail(ErrorCategory::invalid_argument, "VGPU_MATMUL_TILING='" + std::string(name) + "' is not a GLSL matmul tiling.",
       "set it to one of " + known + ", or unset it to let the tuner choose.");
}

// The compute units the tiling rules count on. Where the driver does not tell (0: Vulkan without
// VK_NV_shader_sm_builtins / VK_AMD_shader_core_properties, some GL drivers), a discrete GPU is
// taken to have 128 and an integrated one 32, not 1: with 1 the rules pick the biggest tile even
// where its grid leaves most of a large GPU idle (H200 at N=1024: 39% of cuBLAS against 68% for
// 64×64). Erring high costs less: a tile one size too small was at most ~15% slower there.
namespace {
std::uint64_t tiling_units(const DeviceInfo& device) {
  if (device.compute_units > 0) return device.compute_units;
  if (device.type == DeviceType::discrete_gpu) return 128;
  return device.type == DeviceType::integrated_gpu ? 32 : 1;
}
}  // namespace

void set_software_candidates(bool on) noexcept { g_software_candidates.store(on, std::memory_order_relaxed); }

std::uint32_t glsl_matmul_split_k(std::uint64_t m, std::uint64_t k, std::uint64_t n, const DeviceInfo& device) {
  // K ≫ M, N: a 64×64-tiled grid this small leaves compute units idle while each workgroup walks
  // all of K; slices of K give each unit work, and adding S partials of m·n costs little
  // beside m·n·k. Slices stay ≥ 1024 long so each amortises its tile loads.
  if (k < 4096 || k < 8 * std::max(m, n)) return 1;
  const std::uint64_t units = tiling_units(device);
  const std::uint64_t grid = ceil_div(m, 64) * ceil_div(n, 64);
  const std::uint64_t want = std::min<std::uint64_t>({ceil_div(2 * units, grid), k / 1024, 64});
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(want, 1));
}

GlslMatmulTiling glsl_matmul_choice(std::uint64_t m, std::uint64_t k, std::uint64_t n, const DeviceInfo& device) {
  const bool software = device.type == DeviceType::software || device.type == DeviceType::cpu;
  if (glsl_matmul_split_k(m, k, n, device) > 1) return kT64x64;  // split-K runs on the tiled kernel
  // A product this small (16³) is all launch and tile padding: one invocation per element of C
  // and one loop over k beats any tile. Measured on llvmpipe/lavapipe (docs/benchmarks.md):
  // naive 34–45 µs at 16³ against 137–219 µs for the former 64×64 tile, but slower from 32³ on.
  if (m * n * k <= 16384) return kNaive;
  if (software) {
    // Measured on llvmpipe/lavapipe: 32×32 wins below 64, 64×64 at 64, 128×128 from 128–256 on
    // (each workgroup is one CPU thread's work, so bigger tiles amortise more of its overhead).
    const std::uint64_t side = std::min(m, n);
    if (side >= 128 && kT128x128.fits(device)) return kT128x128;
    return side >= 64 ? kT64x64 : kT32x32;
  }
  // The largest tile that still gives every compute unit a workgroup (as the CUDA tuner): big
  // tiles reuse each loaded byte most, but a grid smaller than the GPU leaves units idle.
  const std::uint64_t units = tiling_units(device);
  for (const GlslMatmulTiling& c : {kT128x128, kT128x64, kT64x64})
    if (c.fits(device) && ceil_div(m, c.bm) * ceil_div(n, c.bn) >= units) return c;
  return kT32x32;
}

OpTuning builtin_gpu_tuning(const OpShape& shape) {
  for (const Row& r : kRows) {
    if (r.op != shape.op) continue;
    OpTuning t;
    t.options.workgroup_size = r.workgroup;
    if (r.vgpu_op) t.options.defines["VGPU_OP"] = r.vgpu_op;
    t.per_group_x = r.per_x;
    t.per_group_y = r.per_y;
    return t;
  }
  fail(ErrorCategory::not_supported, "the GPU built-ins have no op '" + std::string(shape.op) + "'.",
       "use one of vgpu::ops::names().");
}

std::shared_ptr<const OpTuner> gpu_builtin_tuner(std::string_view forced_matmul) {
  static const auto tuner = std::make_shared<const GpuBuiltinTuner>(std::string());
  if (forced_matmul.empty()) return tuner;
  return std::make_shared<const GpuBuiltinTuner>(std::string(forced_matmul));
}

std::shared_ptr<const OpTuner> configured_gpu_builtin_tuner() { return gpu_builtin_tuner(config().matmul_tiling); }

}  // namespace vgpu::kernels
