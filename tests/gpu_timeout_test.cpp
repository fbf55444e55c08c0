// tests/gpu_timeout_test.cpp — no GPU wait without a limit: a kernel that loops for seconds
// (its loop count comes from the params) on the GPU backend named by VGPU_TEST_BACKENDS
// (vulkan, opengl or cuda; ctest runs it once per backend: lavapipe and llvmpipe in CI, the
// H200's drivers on the GPU machine). A wait that gives up raises timeout with a Fix hint and
// loses the device (its work still runs); later calls on it raise device_lost, and opening the
// id again gives a fresh device that computes right. The per-call limits and 0 = no limit too.
//
// Without such a device, main() prints the reason and exits 77 (ctest's skip). Wall-clock
// checks are generous upper bounds only: they prove a call gave up instead of waiting out
// seconds of work, never how fast anything was.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/timing.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

/// The backend under test: VGPU_TEST_BACKENDS (one GPU backend name).
vgpu::BackendKind backend_under_test() {
  const char* v = std::getenv("VGPU_TEST_BACKENDS");
  return vgpu::parse_backend_kind(v && *v ? v : "vulkan");
}

std::string device_id() { return std::string(vgpu::to_string(backend_under_test())) + ":0"; }

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

constexpr std::uint32_t kGroupSize = 64;

SpinParams params_of(const Work& w) {
  const std::uint64_t inner = std::clamp<std::uint64_t>(w.rounds, 1, 60000);
  const std::uint64_t outer = std::clamp<std::uint64_t>((w.rounds + inner - 1) / inner, 1, 65535);
  return SpinParams{w.groups * kGroupSize, static_cast<std::uint32_t>(outer), static_cast<std::uint32_t>(inner), 0};
}

/// data[i] = 16 × outer × inner xorshift32 steps of data[i].
vgpu::KernelSource spin_source() {
  const std::string round = "x ^= x << 13; x ^= x >> 17; x ^= x << 5; ";
  std::string rounds16;
  for (int i = 0; i < 16; ++i) rounds16 += round;
  vgpu::KernelSource s;
  s.name = "test.spin";
  const std::string glsl =
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
      "}\n";
  const std::string cuda =
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
      "}\n";
  set_glsl(s, glsl);
  set_cuda(s, cuda, "spin");
  s.params_size = sizeof(SpinParams);
  s.bindings = {
      {0, vgpu::Access::read_write, "data", [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
         return std::uint64_t{pb.as<SpinParams>().n} * 4;
       }}};
  return s;
}

vgpu::CompileOptions spin_options() {
  vgpu::CompileOptions o;
  o.workgroup_size = {kGroupSize, 1, 1};
  return o;
}

std::vector<std::uint32_t> spin_input(std::uint32_t n) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = 0x9E3779B9u * (i + 1);
  return v;
}

std::vector<std::uint32_t> spin_reference(std::vector<std::uint32_t> v, const SpinParams& p) {
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
constexpr std::uint32_t kMaxGroups = 65535;

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

bool is_llvmpipe(const vgpu::DeviceInfo& info) { return info.name.find("llvmpipe") != std::string::npos; }

/// Work that keeps this device busy for about seconds: rounds grow first (up to what the device
/// runs per invocation: 50000 on llvmpipe), then groups; the last doubling that took over 50 ms
/// is scaled linearly to the target (measured as the time of the extra work, so fixed costs do
/// not count).
Work work_for(vgpu::Device device, double seconds) {
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
      const double scale = std::max(1.0, (seconds - base) / std::max(more - base, 1e-6) + 1.0);  // in units of w
      Work target = w;
      if (grow_rounds)
        target.rounds = std::min<std::uint64_t>(max_rounds, static_cast<std::uint64_t>(double(w.rounds) * scale));
      else
        target.groups = static_cast<std::uint32_t>(std::min<double>(kMaxGroups, double(w.groups) * scale));
      return target;
    }
    w = twice;
  }
}

/// Work for a runaway of about 4 s on this backend's device (measured once per process).
const Work& runaway() {
  static const Work w = [] {
    vgpu::Runtime runtime(vgpu::test::only(backend_under_test()));
    return work_for(runtime.open(device_id()), 4.0);
  }();
  std::printf("a ~4 s runaway here: %u groups x %llu rounds\n", w.groups, static_cast<unsigned long long>(w.rounds));
  return w;
}

}  // namespace

TEST_CASE("gpu timeout: a kernel looping for seconds hits the device's limit, loses the device, and a fresh one works",
          "[timeout][gpu]") {
  const Work long_run = runaway();
  vgpu::Runtime runtime(vgpu::test::only(backend_under_test()));
  vgpu::Device device = runtime.open(device_id());
  device.set_timeout(100ms);
  Spin spin(device, std::max<std::uint32_t>(long_run.groups, 10));  // room for the check below too
  spin.check({10, 2});  // right before anything times out
  spin.start(long_run);
  const auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "time limit of 100 ms", spin.result(long_run));
  const double took = seconds_since(t0);
  INFO("the read gave up after " << took << " s; the kernel runs ~4 s (" << long_run.groups << " groups x "
                                 << long_run.rounds << " rounds)");
  CHECK(took < 2.0);
  CHECK(device.lost());
  // Every later call on the lost device is refused at once, with how to get a fresh one.
  REQUIRE_VGPU_ERROR(device_lost, "open(\"" + device_id() + "\")", spin.result(long_run));
  REQUIRE_VGPU_ERROR(device_lost, "is lost", device.create_buffer(64));
  REQUIRE_VGPU_ERROR(device_lost, "is lost", device.synchronize());
  REQUIRE_VGPU_ERROR(device_lost, "is lost", spin.start({1, 1}));
  // The runtime never hands the lost instance out again: the same id opens a fresh device.
  vgpu::Device fresh = runtime.open(device_id());
  CHECK(!(fresh == device));
  CHECK(!fresh.lost());
  Spin again(fresh, 4);
  again.check({1000, 4});
  CHECK(runtime.open(device_id()) == fresh);
}

TEST_CASE("gpu timeout: dropping a lost device whose kernel still runs neither hangs nor crashes", "[timeout][gpu]") {
  const Work long_run = runaway();
  vgpu::Runtime runtime(vgpu::test::only(backend_under_test()));
  double dropped_in = 0;
  {
    vgpu::Device device = runtime.open(device_id());
    device.set_timeout(100ms);  // also bounds the wait when the device goes
    Spin spin(device, long_run.groups);
    spin.start(long_run);
    REQUIRE_VGPU_ERROR(timeout, "now lost", spin.result(long_run));
    REQUIRE(device.lost());
    // A fresh device first (opening it is not what is measured: the GPU is still busy)...
    auto t0 = Clock::now();
    Spin replacement(runtime.open(device_id()), 1);
    std::printf("opening a fresh device beside the runaway took %.3f s\n", seconds_since(t0));
    t0 = Clock::now();
    spin = std::move(replacement);  // ...then the last handles of the lost device go here,
    device = vgpu::Device();
    dropped_in = seconds_since(t0);  // with its kernel still running for seconds
  }
  INFO("dropping the lost device took " << dropped_in << " s");
  CHECK(dropped_in < 2.0);
  Spin fresh(runtime.open(device_id()), 3);
  fresh.check({700, 3});
}

TEST_CASE("gpu timeout: PersistentKernel's own limit gives timeout under a 60 s device limit", "[timeout][gpu]") {
  const Work long_run = runaway();
  const SpinParams p = params_of(long_run);
  vgpu::Runtime runtime(vgpu::test::only(backend_under_test()));
  vgpu::Device device = runtime.open(device_id());
  device.set_timeout(60s);
  vgpu::KernelPlan plan;
  plan.source = spin_source();
  plan.options = spin_options();
  plan.tensors = {{"data", vgpu::DType::u32, {p.n}, vgpu::Access::read_write, false}};
  plan.steps = {{{{0, 0}}, vgpu::ParamsBlock::of(p), {long_run.groups, 1, 1}}};
  vgpu::PersistentKernel pk(device, plan);
  std::vector<std::uint32_t> data = spin_input(p.n);
  const auto t0 = Clock::now();
  REQUIRE_VGPU_ERROR(timeout, "time limit of 150 ms", pk({vgpu::TensorArg(data.data(), {p.n})}, 150ms));
  CHECK(seconds_since(t0) < 2.0);
  CHECK(device.lost());
  REQUIRE_VGPU_ERROR(device_lost, "is lost", pk({vgpu::TensorArg(data.data(), {p.n})}));
  Spin fresh(runtime.open(device_id()), 2);
  CHECK(!fresh.device.lost());
  fresh.check({500, 2});
}

TEST_CASE("gpu timeout: a limit of 0 waits as long as the work takes", "[timeout][gpu]") {
  Work run = runaway();  // a tenth of it: ~0.4 s
  if (run.groups > 10)
    run.groups /= 10;
  else
    run.rounds /= 10;
  const SpinParams p = params_of(run);
  vgpu::Runtime runtime(vgpu::test::only(backend_under_test()));
  vgpu::Device device = runtime.open(device_id());
  device.set_timeout(30ms);  // far shorter than the kernel
  Spin spin(device, run.groups);
  const std::vector<std::uint32_t> expected = spin_reference(spin_input(8), p);  // the first 8 elements
  spin.start(run);
  device.synchronize(0ms);  // no limit: returns once the kernel is done
  CHECK(!device.lost());
  std::vector<std::uint32_t> out = spin.result(run);  // already done: no wait
  CHECK(std::vector<std::uint32_t>(out.begin(), out.begin() + 8) == expected);
  device.set_timeout(0ms);
  spin.start(run);
  out = spin.result(run);
  CHECK(std::vector<std::uint32_t>(out.begin(), out.begin() + 8) == expected);
  CHECK(!device.lost());
}

}  // namespace vgpu_test

int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-h" || arg == "-?" || arg == "--help") listing = true;
  }
  if (!listing) {
    vgpu::BackendKind kind{};
    try {
      kind = vgpu_test::backend_under_test();
    } catch (const vgpu::Error& e) {
      std::fprintf(stderr, "gpu timeout tests: bad VGPU_TEST_BACKENDS: %s\n", e.what());
      return 2;
    }
    vgpu::Runtime runtime(vgpu::test::only(kind));
    const std::string why = vgpu::test::why_unavailable(runtime, kind);
    if (!why.empty()) {
      std::printf("SKIPPED timeout.%s: no %s device: %s\n", std::string(vgpu::to_string(kind)).c_str(),
                  std::string(vgpu::to_string(kind)).c_str(), why.c_str());
      return 77;
    }
    const vgpu::DeviceInfo info = runtime.open(vgpu_test::device_id()).info();
    std::printf("gpu timeout tests on %s (%s)\n", info.id().c_str(), info.name.c_str());
    std::fflush(stdout);
  }
  return vgpu_test::run_catch_session(argc, argv);
}
