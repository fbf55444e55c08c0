// SPDX-License-Identifier: Apache-2.0
// tests/selection/result_check_test.cpp — calibration checks each candidate's result before a device can
// be chosen (issue 29: Mesa's software devices stop shader loops after 65 535 iterations, and
// calibration timed their wrong results as fast). On the test backend, whose wrong_results knob
// makes a device fast and wrong: a device that computes wrong is never chosen for any built-in
// op, explain() and the log say why, the persisted record keeps the reason, a user kernel is
// checked against the CPU dialect's result where vgpu's CPU device can run it, and the right
// device is still chosen as before. Costs come from the injected latencies, which differ by an
// order of magnitude; no assertion depends on a measured time.
#include "result_check.hpp"

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "call_data.hpp"
#include "selection_store.hpp"
#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/kernel_sources.hpp"
#include "support/logged_runtime.hpp"
#include "support/test_backend.hpp"
#include "vgpu/inventory.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test {
namespace {

using Knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>;
using vgpu::test::TempDir;

/// A runtime over the given backends on its own cache directory, keeping its log lines.
using Logged = vgpu::test::LoggedRuntime;

const vgpu::SelectionCandidate& candidate(const vgpu::Selection& s, const std::string& id) {
  for (const auto& c : s.candidates)
    if (c.device == id) return c;
  FAIL("no candidate " << id << " in\n" << s.describe());
  throw;  // unreachable
}

/// The line describe() prints for device id.
std::string line_of(const vgpu::Selection& s, const std::string& id) {
  const std::string text = s.describe(), start = "  " + id + ": ";
  const auto at = text.find(start);
  if (at == std::string::npos) return {};
  return text.substr(at, text.find('\n', at) - at);
}

struct OpCase {
  std::string op;
  vgpu::Shape shape;
};

// Every built-in op, at shapes whose outputs are not all alike (random inputs).
const std::vector<OpCase> kOps = {{"axpy", {1000}},       {"add", {1000}},          {"mul", {1000}},
                                  {"reduce_sum", {1000}}, {"matmul", {33, 65, 17}}, {"softmax_rows", {7, 100}}};

// ---- a user kernel with only a CPU dialect: each output sums kReps inputs (a few ms on the CPU) ----
struct SumParams {
  std::uint32_t n, reps, pad0, pad1;
};
constexpr std::uint32_t kReps = 2048;

/// out[i] = Σ_{r < reps} in[(i + r) mod n], only in the CPU dialect.
vgpu::PlanFactory window_sum_factory(std::uint32_t reps = kReps) {
  return [reps](const vgpu::DeviceInfo&, const vgpu::Shape& shape) {
    const auto n = static_cast<std::uint32_t>(shape.at(0));
    vgpu::KernelPlan p;
    p.source.name = "test.window_sum";
    set_cpu(
        p.source,
        [](const vgpu::CpuWorkgroup& wg) {
          const auto& q = wg.params_as<SumParams>();
          const float* in = wg.buffer<const float>(0);
          float* out = wg.buffer<float>(1);
          for (std::uint32_t x = 0; x < wg.workgroup_size[0]; ++x) {
            const std::uint64_t i = std::uint64_t{wg.workgroup_id[0]} * wg.workgroup_size[0] + x;
            if (i >= q.n) continue;
            float acc = 0;
            for (std::uint32_t r = 0; r < q.reps; ++r) acc += in[(i + r) % q.n];
            out[i] = acc;
          }
        },
        "1");
    const auto n_floats = [](const vgpu::ParamsBlock& pb, const vgpu::Groups&) -> std::uint64_t {
      return std::uint64_t{pb.as<SumParams>().n} * 4;
    };
    p.source.bindings = {{0, vgpu::Access::read, "in", n_floats}, {1, vgpu::Access::write, "out", n_floats}};
    p.source.params_size = sizeof(SumParams);
    p.options.workgroup_size = {64, 1, 1};
    p.tensors = {{"in", vgpu::DType::f32, {n}, vgpu::Access::read, false},
                 {"out", vgpu::DType::f32, {n}, vgpu::Access::write, false}};
    vgpu::PlanStep step;
    step.slot_tensor = {{0, 0}, {1, 1}};
    step.params = vgpu::ParamsBlock::of(SumParams{n, reps, 0, 0});
    step.groups = vgpu::Groups{(n + 63) / 64, 1, 1};
    p.steps = {step};
    return p;
  };
}

}  // namespace

TEST_CASE("the matmul check sees a sum that stopped after 65535 iterations, and passes plain float sums",
          "[check][unit]") {
  // What Mesa's loop limiter does to a K loop (issue 29), against what any right float32 kernel
  // does: the worst-case bound (2·k·eps·Σ|ab|) allows 100% at k ≈ 4e6, so the check must hold
  // right results to the probabilistic one, and calibration's inputs must have a mean.
  vgpu::Runtime cpu(vgpu::test::only(vgpu::BackendKind::cpu));
  const vgpu::DeviceInfo info = cpu.devices().at(0);
  for (const std::uint32_t k : {70000u, 1u << 20, 1u << 22}) {
    INFO("k = " << k);
    const vgpu::KernelPlan plan = vgpu::ops::matmul(info, 1, k, 1);
    vgpu::detail::CallData data = vgpu::detail::make_call_data(plan);
    const auto ref = vgpu::detail::check::builtin_reference("matmul", plan, data);
    REQUIRE(ref);
    const float* a = static_cast<const float*>(data.args[0].in);
    const float* b = static_cast<const float*>(data.args[1].in);
    float* c = static_cast<float*>(data.args[2].out);
    // A float loop in order (the least accurate a right kernel is), then tiles of 16 per
    // iteration: both right.
    float serial = 0;
    for (std::uint32_t p = 0; p < k; ++p) serial += a[p] * b[p];
    c[0] = serial;
    const auto right = vgpu::detail::check::compare(*ref, plan, data);
    INFO(right.describe());
    CHECK(right.ok());
    // Stopped after 65535 iterations of one term (a naive kernel), or of 16 (a tiled one).
    for (const std::uint64_t per : {1u, 16u}) {
      const std::uint64_t stop = std::min<std::uint64_t>(k, 65535 * per);
      // Losing under 1% of a 10⁶-term sum is within float32's own error there (documented):
      // 2^20 in tiles of 16 loses 16 terms.
      if ((k - stop) * 100 < k) continue;
      float cut = 0;
      for (std::uint64_t p = 0; p < stop; ++p) cut += a[p] * b[p];
      c[0] = cut;
      const auto wrong = vgpu::detail::check::compare(*ref, plan, data);
      INFO(per << " per iteration: " << wrong.describe());
      CHECK(!wrong.ok());
    }
  }
}

TEST_CASE("the matmul_tf32 check allows the TF32 input rounding and no more, and the matmul check neither",
          "[check][unit][tf32]") {
  vgpu::Runtime cpu(vgpu::test::only(vgpu::BackendKind::cpu));
  const vgpu::DeviceInfo info = cpu.devices().at(0);
  const vgpu::KernelPlan plan = vgpu::ops::plan("matmul_tf32", info, {64, 512, 48});
  REQUIRE(plan.source.name == "vgpu.matmul_tf32");
  vgpu::detail::CallData data = vgpu::detail::make_call_data(plan);
  const auto tf32 = vgpu::detail::check::builtin_reference("matmul_tf32", plan, data);
  REQUIRE(tf32);
  const float* a = static_cast<const float*>(data.args[0].in);
  const float* b = static_cast<const float*>(data.args[1].in);
  float* c = static_cast<float*>(data.args[2].out);
  // C from inputs rounded to TF32 (10 mantissa bits, to nearest) as a tensor core reads them,
  // then from inputs truncated to 7 bits (a kernel that claims TF32 and loses more: truncation's
  // errors all shrink the magnitudes, so they add up instead of cancelling).
  auto product_with = [&](unsigned drop_bits, bool nearest) {
    auto round = [drop_bits, nearest](float x) {
      std::uint32_t u;
      std::memcpy(&u, &x, 4);
      const std::uint32_t half = nearest ? 1u << (drop_bits - 1) : 0u, mask = ~((1u << drop_bits) - 1u);
      u = (u + half) & mask;
      std::memcpy(&x, &u, 4);
      return x;
    };
    for (std::uint32_t i = 0; i < 64; ++i)
      for (std::uint32_t j = 0; j < 48; ++j) {
        double sum = 0;
        for (std::uint32_t p = 0; p < 512; ++p) sum += double(round(a[i * 512 + p])) * round(b[p * 48 + j]);
        c[i * 48 + j] = static_cast<float>(sum);
      }
  };
  product_with(13, true);
  const auto right = vgpu::detail::check::compare(*tf32, plan, data);
  INFO(right.describe());
  CHECK(right.ok());
  // The same TF32 result is wrong for matmul (float32 throughout)...
  vgpu::KernelPlan highest = plan;
  highest.source.name = "vgpu.matmul";
  const auto f32 = vgpu::detail::check::builtin_reference("matmul", highest, data);
  REQUIRE(f32);
  CHECK(!vgpu::detail::check::compare(*f32, highest, data).ok());
  // ...and 7-bit inputs are wrong even for matmul_tf32.
  product_with(16, false);
  CHECK(!vgpu::detail::check::compare(*tf32, plan, data).ok());
  // A plan under another name is no built-in's: no reference.
  CHECK(!vgpu::detail::check::builtin_reference("matmul_tf32", highest, data));
}

TEST_CASE("a faster device that computes a wrong result is never chosen, and explain says why", "[check]") {
  for (const OpCase& c : kOps) {
    INFO(c.op << " " << vgpu::to_string(c.shape));
    // test:0 is the fastest (no latency, and it skips the work) but wrong; test:1 is right and
    // ten times faster than test:2.
    Knobs k = test_devices({0, 2000, 20000}, vgpu::test::unique_name("wrong-" + c.op));
    k[0]->wrong_results = true;
    TempDir dir("check-");
    Logged l(test_runtime_options(k), dir.path);
    const vgpu::Selection s = l.runtime.explain(c.op, c.shape);
    INFO(s.describe() << l.all());
    CHECK(s.device == "test:1");
    CHECK(l.runtime.select(c.op, c.shape).info().id() == "test:1");
    const vgpu::SelectionCandidate& wrong = candidate(s, "test:0");
    CHECK(!wrong.eligible);
    CHECK(wrong.check == vgpu::ResultCheck::wrong);
    CHECK(wrong.check_error > 1);
    CHECK(wrong.runs == 0);  // never timed
    CHECK_THAT(wrong.note, Catch::Matchers::StartsWith("rejected: wrong result (max rel error "));
    CHECK_THAT(wrong.note, Catch::Matchers::ContainsSubstring("against a double-precision reference"));
    CHECK_THAT(line_of(s, "test:0"), Catch::Matchers::StartsWith("  test:0: rejected: wrong result (max rel error "));
    CHECK(candidate(s, "test:1").check == vgpu::ResultCheck::passed);
    CHECK(candidate(s, "test:1").check_error <= 1);
    CHECK(l.count("test:0 computed a wrong result for '" + c.op + "'") == 1);
    // The others' results were checked too, and passed.
    CHECK_THAT(line_of(s, "test:1"), Catch::Matchers::ContainsSubstring("result checked"));
  }
}

TEST_CASE("the rejection persists: a later runtime reads why without measuring", "[check]") {
  // Two devices, one wrong: a real comparison still (calibrated, stored), though one is left.
  for (const std::vector<std::uint64_t>& latencies : {std::vector<std::uint64_t>{0, 2000, 20000}, {0, 2000}}) {
    INFO(latencies.size() << " devices");
    const std::string salt = vgpu::test::unique_name("wrong-persist");
    TempDir dir("check-persist-");
    Knobs k = test_devices(latencies, salt);
    k[0]->wrong_results = true;
    {
      Logged l(test_runtime_options(k), dir.path);
      const vgpu::Selection first = l.runtime.explain("axpy", {1000});
      CHECK(first.device == "test:1");
      CHECK(first.source == vgpu::SelectionSource::calibrated);
    }
    const auto dispatches = [&] {
      std::uint64_t n = 0;
      for (const auto& d : k) n += d->dispatches;
      return n;
    };
    const std::uint64_t before = dispatches();
    Logged l(test_runtime_options(k), dir.path);
    const vgpu::Selection s = l.runtime.explain("axpy", {1000});
    INFO(s.describe() << l.all());
    CHECK(s.source == vgpu::SelectionSource::persisted);
    CHECK(s.device == "test:1");
    CHECK(dispatches() == before);
    CHECK_THAT(candidate(s, "test:0").note, Catch::Matchers::StartsWith("rejected: wrong result (max rel error "));
    CHECK(candidate(s, "test:0").check == vgpu::ResultCheck::wrong);
    CHECK(!candidate(s, "test:0").eligible);
    CHECK(candidate(s, "test:1").check == vgpu::ResultCheck::passed);
    CHECK_THAT(line_of(s, "test:1"), Catch::Matchers::ContainsSubstring("result checked"));
  }
}

TEST_CASE("the right device is still chosen as before: checked, fastest first", "[check]") {
  for (const OpCase& c : kOps) {
    INFO(c.op);
    Knobs k = test_devices({2000, 0, 20000}, vgpu::test::unique_name("right-" + c.op));
    TempDir dir("check-right-");
    Logged l(test_runtime_options(k), dir.path);
    const vgpu::Selection s = l.runtime.explain(c.op, c.shape);
    INFO(s.describe() << l.all());
    CHECK(s.device == "test:1");
    CHECK(s.source == vgpu::SelectionSource::calibrated);
    for (const auto& cand : s.candidates) {
      CHECK(cand.eligible);
      CHECK(cand.check == vgpu::ResultCheck::passed);
      CHECK_THAT(cand.note, !Catch::Matchers::ContainsSubstring("rejected"));
      CHECK_THAT(line_of(s, cand.device), Catch::Matchers::ContainsSubstring("result checked"));
    }
    CHECK(l.count("wrong result") == 0);
  }
  // A wrong device that is also slow is rejected as well, and the fast right one chosen.
  Knobs k = test_devices({0, 20000}, vgpu::test::unique_name("right-slow-wrong"));
  k[1]->wrong_results = true;
  TempDir dir("check-right-");
  Logged l(test_runtime_options(k), dir.path);
  const vgpu::Selection s = l.runtime.explain("axpy", {1000});
  INFO(s.describe());
  CHECK(s.device == "test:0");
  CHECK_THAT(candidate(s, "test:1").note, Catch::Matchers::StartsWith("rejected: wrong result"));
}

TEST_CASE("a user kernel is checked against the CPU dialect's result on vgpu's CPU device", "[check][user]") {
  // test:0 claims to be a discrete GPU, skips the work (fast) and is wrong; cpu:0 is vgpu's CPU
  // device, whose CPU-dialect result is the reference.
  Knobs k = test_devices({0}, vgpu::test::unique_name("wrong-user"));
  k[0]->wrong_results = true;
  k[0]->type = vgpu::DeviceType::discrete_gpu;
  vgpu::RuntimeOptions o = test_runtime_options(k);
  o.backends.push_back(std::shared_ptr<vgpu::ComputeBackend>(vgpu::make_cpu_backend()));
  TempDir dir("check-user-");
  Logged l(o, dir.path);
  const vgpu::Selection s = l.runtime.explain("test.window_sum", {4096}, window_sum_factory());
  INFO(s.describe() << l.all());
  CHECK(s.device == "cpu:0");
  const vgpu::SelectionCandidate& wrong = candidate(s, "test:0");
  CHECK(!wrong.eligible);
  CHECK_THAT(wrong.note, Catch::Matchers::StartsWith("rejected: wrong result (max rel error "));
  CHECK(wrong.check == vgpu::ResultCheck::wrong);
  CHECK_THAT(wrong.note, Catch::Matchers::ContainsSubstring("against cpu:0's result of the op's CPU dialect"));
  CHECK(candidate(s, "cpu:0").check == vgpu::ResultCheck::passed);
  CHECK(l.count("test:0 computed a wrong result for 'test.window_sum'") == 1);
  // Through a KernelDatabase as a user calls it: the call runs on cpu:0 and is right.
  vgpu::KernelDatabase db(l.runtime);
  db.add("test.window_sum", window_sum_factory());
  std::vector<float> in(4096), out(4096, -1.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3.0f;
  const vgpu::TensorArg args[] = {vgpu::TensorArg(std::as_const(in).data(), {4096}),
                                  vgpu::TensorArg(out.data(), {4096})};
  db.call("test.window_sum", {4096}, args);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    double want = 0;
    for (std::uint32_t r = 0; r < kReps; ++r) want += in[(i + r) % in.size()];
    bad += std::abs(out[i] - want) > 1e-3;
  }
  CHECK(bad == 0);
}

TEST_CASE("a user kernel bigger than a probe is checked at the probe's shape", "[check][user]") {
  // 2^21 elements: the CPU reference and each candidate's check run at 2^20, so the reference
  // stays as cheap as a probe; the devices are then timed at the real shape.
  Knobs k = test_devices({0}, vgpu::test::unique_name("wrong-user-big"));
  k[0]->wrong_results = true;
  k[0]->type = vgpu::DeviceType::discrete_gpu;
  vgpu::RuntimeOptions o = test_runtime_options(k);
  o.backends.push_back(std::shared_ptr<vgpu::ComputeBackend>(vgpu::make_cpu_backend()));
  TempDir dir("check-user-big-");
  Logged l(o, dir.path);
  const vgpu::Selection s = l.runtime.explain("test.window_sum", {1u << 21}, window_sum_factory(4));
  INFO(s.describe() << l.all());
  CHECK(s.device == "cpu:0");
  CHECK(candidate(s, "test:0").check == vgpu::ResultCheck::wrong);
  CHECK(candidate(s, "cpu:0").check == vgpu::ResultCheck::passed);
  CHECK(l.count("test:0 computed a wrong result for 'test.window_sum' at [1048576]") == 1);
}

TEST_CASE("a user kernel with no CPU reference is not checked (the documented limit)", "[check][user]") {
  // Only the test backend: no vgpu CPU device runs the CPU dialect, so there is no reference.
  Knobs k = test_devices({0, 2000}, vgpu::test::unique_name("unchecked-user"));
  TempDir dir("check-unchecked-");
  Logged l(test_runtime_options(k), dir.path);
  const vgpu::Selection s = l.runtime.explain("test.window_sum", {4096}, window_sum_factory());
  INFO(s.describe() << l.all());
  for (const auto& c : s.candidates) {
    CHECK(c.check == vgpu::ResultCheck::unchecked);
    CHECK_THAT(line_of(s, c.device), !Catch::Matchers::ContainsSubstring("result checked"));
  }
}

TEST_CASE("a choice stored before results were checked neither serves nor is kept: measured again", "[check][old]") {
  // A pointer as an older vgpu left it: its key is a "select;v=2" selection, made without
  // checking, naming test:0, which computes wrong. With background calibration on, following it
  // must not serve test:0 in the interim (a recheck would), and the new choice is right.
  Knobs k = test_devices({0, 2000}, vgpu::test::unique_name("old-record"));
  k[0]->wrong_results = true;
  vgpu::RuntimeOptions o = test_runtime_options(k);
  o.backends.push_back(std::shared_ptr<vgpu::ComputeBackend>(vgpu::make_cpu_backend()));
  o.background = true;
  TempDir dir("check-old-");
  {
    vgpu::cache::DiskStore store(vgpu::test::options_for(dir.path));
    const nlohmann::json pointer = {
        {"v", 2},
        {"device", "test:0"},
        {"key", "select;v=2;vgpu=" + vgpu::version_string() + ";plan=builtin;op=axpy;class=10;devices=test:0=0,"},
        {"vgpu", vgpu::version_string()},
        {"plan", "builtin"},
        {"shape", {1000}}};
    vgpu::detail::store_selection_text(store, "select-last;v=1;op=axpy;class=10;scope=test,cpu", pointer.dump(), 0);
  }
  Logged l(o, dir.path);
  const vgpu::Selection interim = l.runtime.choose("axpy", {1000});
  INFO(interim.describe() << l.all());
  CHECK(interim.device != "test:0");
  CHECK(l.count("the stored choice for axpy class 10 was made without checking results") == 1);
  REQUIRE(l.runtime.settle(std::chrono::seconds(60)));
  const vgpu::Selection s = l.runtime.explain("axpy", {1000});
  INFO(s.describe());
  CHECK(s.device != "test:0");
  CHECK(candidate(s, "test:0").check == vgpu::ResultCheck::wrong);
}

TEST_CASE("a 16-bit op is selected per dtype, each candidate checked against the CPU's 16-bit result",
          "[check][dtype]") {
  // matmul on float16 and bfloat16 arrays is its own op for selection ("matmul.f16"): its own
  // size classes and choices, the CPU among the candidates, and a wrong device rejected by the
  // check against cpu:0's result of the same 16-bit plan.
  Knobs k = test_devices({0, 0}, vgpu::test::unique_name("dtype-select"));
  k[0]->wrong_results = true;
  k[0]->type = vgpu::DeviceType::discrete_gpu;
  vgpu::RuntimeOptions o = test_runtime_options(k);
  o.backends.push_back(std::shared_ptr<vgpu::ComputeBackend>(vgpu::make_cpu_backend()));
  TempDir dir("check-dtype-");
  Logged l(o, dir.path);
  for (vgpu::DType dtype : {vgpu::DType::f16, vgpu::DType::bf16}) {
    const vgpu::Selection s = vgpu::explain(l.runtime, "matmul", {48, 64, 40}, dtype);
    INFO(s.describe() << l.all());
    CHECK(s.op == "matmul." + std::string(vgpu::to_string(dtype)));
    CHECK(s.device != "test:0");
    CHECK(candidate(s, "test:0").check == vgpu::ResultCheck::wrong);
    CHECK(candidate(s, "test:1").check == vgpu::ResultCheck::passed);  // right: within one 16-bit ULP
    CHECK(candidate(s, "cpu:0").eligible);
    CHECK(vgpu::select(l.runtime, "matmul", {48, 64, 40}, dtype).info().id() == s.device);
  }
  CHECK(vgpu::explain(l.runtime, "matmul", {48, 64, 40}, vgpu::DType::f32).op == "matmul");
  CHECK(vgpu::dtype_op_name("softmax_rows", vgpu::DType::bf16) == "softmax_rows.bf16");
  REQUIRE_VGPU_ERROR(not_supported, "float64", vgpu::dtype_op_name("matmul", vgpu::DType::f64));
  REQUIRE_VGPU_ERROR(invalid_argument, "not a built-in op", vgpu::dtype_op_name("test.window_sum", vgpu::DType::f16));
}

}  // namespace vgpu_test
