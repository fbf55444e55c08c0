// SPDX-License-Identifier: Apache-2.0
// tests/selection/prediction_model_test.cpp — the calibration's prediction model
// (core/runtime/selection/prediction_model.hpp): the fit on synthetic points (known coefficients recovered, bytes and
// flops that grow together, noise, non-negative coefficients), the persisted entry's round trip and hostile entries,
// and, on the test backend (a slow host link per KiB, a latency per dispatch), that a device is excluded only by a
// trusted model, that a stored model is reused without probing, and that a check off by more than 2x untrusts it for
// good. No wall-clock time is asserted: the injected costs differ by orders of magnitude.
#include "support/catch.hpp"

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "prediction_model.hpp"
#include "selection_store.hpp"
#include "support/cache_fixtures.hpp"
#include "support/capture_stderr.hpp"
#include "support/test_backend.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"

namespace vgpu_test {
namespace {

namespace model = vgpu::detail::model;
namespace cal = vgpu::detail::calibration;
using vgpu::Shape;
using Knobs = std::vector<std::shared_ptr<TestDeviceKnobs>>;

constexpr double kFixed = 2e-5, kPerByte = 1e-10, kPerFlop = 2e-13;

double truth(const model::OpCost& c) { return kFixed + c.bytes * kPerByte + c.flops * kPerFlop; }

model::Point point(const std::string& op, const Shape& s, double seconds) {
  const model::OpCost c = model::op_cost(op, s);
  return {s, c.bytes, c.flops, seconds};
}

std::vector<model::Point> matmul_points(double noise = 0, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  std::vector<model::Point> pts;
  for (std::uint64_t n = 32; n <= 1024; n *= 2) {
    const Shape s{n, n, n};
    pts.push_back(point("matmul", s, truth(model::op_cost("matmul", s)) * (1 + u(rng))));
  }
  return pts;
}

bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::abs(b); }

TEST_CASE("the fit recovers known coefficients exactly from matmul probes", "[model][fit]") {
  const model::Model m = model::fit(matmul_points());
  CHECK(close(m.fixed_s, kFixed, 1e-6));
  CHECK(close(m.s_per_byte, kPerByte, 1e-6));
  CHECK(close(m.s_per_flop, kPerFlop, 1e-6));
  const model::OpCost big = model::op_cost("matmul", {4096, 4096, 4096});
  CHECK(close(m.predict(big), truth(big), 1e-6));
}

TEST_CASE("bytes and flops that grow together: the 2-parameter fit, exact again", "[model][fit]") {
  std::vector<model::Point> pts;
  for (std::uint64_t n = 1 << 14; n <= (1 << 23); n *= 8) {
    const model::OpCost c = model::op_cost("axpy", {n});
    pts.push_back(point("axpy", {n}, kFixed + c.bytes * kPerByte + c.flops * kPerFlop));
  }
  const model::Model m = model::fit(pts);
  CHECK(m.s_per_flop == 0);  // its flops cannot be told apart from its bytes: one size term
  CHECK(close(m.fixed_s, kFixed, 1e-6));
  const model::OpCost big = model::op_cost("axpy", {100000000});
  CHECK(close(m.predict(big), kFixed + big.bytes * kPerByte + big.flops * kPerFlop, 1e-6));
  // A user op: work only, fixed + work·c.
  const model::OpCost user = model::op_cost("my_op", {1000, 10});
  CHECK_FALSE(user.known);
  CHECK(user.flops == 10000);
  const model::Model u = model::fit({point("my_op", {1000}, 1e-3 + 1000e-9), point("my_op", {8000}, 1e-3 + 8000e-9)});
  CHECK(close(u.fixed_s, 1e-3, 1e-6));
  CHECK(close(u.s_per_flop, 1e-9, 1e-6));
}

TEST_CASE("with 10% noise the fit still predicts 4096³ within 2x", "[model][fit]") {
  const model::OpCost big = model::op_cost("matmul", {4096, 4096, 4096});
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const model::Model m = model::fit(matmul_points(0.10, seed));
    INFO("seed " << seed << ": predicted " << m.predict(big) << " s, truth " << truth(big) << " s");
    CHECK(m.predict(big) <= 2 * truth(big));
    CHECK(m.predict(big) >= truth(big) / 2);
  }
}

TEST_CASE("coefficients are never negative, even where plain least squares wants them so", "[model][fit]") {
  // Times that grow faster than any term allows at the small end (a cache falling out): the
  // unconstrained solution has a negative fixed cost.
  std::vector<model::Point> pts;
  for (std::uint64_t n = 32; n <= 1024; n *= 2) {
    const model::OpCost c = model::op_cost("matmul", {n, n, n});
    pts.push_back(point("matmul", {n, n, n}, c.flops * kPerFlop * (n >= 256 ? 1.0 : 0.2) + c.bytes * 1e-12));
  }
  const model::Model m = model::fit(pts);
  CHECK(m.fixed_s >= 0);
  CHECK(m.s_per_byte >= 0);
  CHECK(m.s_per_flop >= 0);
  CHECK(m.predict(model::op_cost("matmul", {1024, 1024, 1024})) > 0);
}

TEST_CASE("a fit needs two positive points, else invalid_argument with a Fix", "[model][fit][errors]") {
  auto fails = [](std::vector<model::Point> pts) {
    try {
      model::fit(std::move(pts));
    } catch (const vgpu::Error& e) {
      CHECK(e.category() == vgpu::ErrorCategory::invalid_argument);
      CHECK_THAT(std::string(e.what()), Catch::Matchers::ContainsSubstring("Fix:"));
      return true;
    }
    return false;
  };
  CHECK(fails({point("axpy", {1000}, 1e-3)}));
  CHECK(fails({point("axpy", {1000}, 1e-3), point("axpy", {8000}, 0)}));
}

TEST_CASE("a check off by more than 2x at a size past the probes untrusts the model for good", "[model][trust]") {
  model::Model m = model::fit(matmul_points());
  m.record_check({512, 512, 512}, 1e-3, 3.5e-3);  // below the largest probe (1024): says nothing
  CHECK(m.trusted);
  m.record_check({4096, 4096, 4096}, 0.10, 0.15);  // 1.5x: fine
  CHECK(m.trusted);
  m.record_check({4096, 4096, 4096}, 0.663, 0.048);  // 14x, as the linear probe once was
  CHECK_FALSE(m.trusted);
  m.record_check({4096, 4096, 4096}, 0.05, 0.048);  // a good check later does not re-trust it
  CHECK_FALSE(m.trusted);
  CHECK(m.checks.size() == 4);
}

TEST_CASE("the persisted model round-trips, and the strict reader refuses a hostile entry", "[model][persist]") {
  model::Model m = model::fit(matmul_points());
  m.op = "matmul";
  m.device = "test:1";
  m.record_check({4096, 4096, 4096}, 0.1, 0.12);
  const std::string text = model::to_json(m);
  std::string why;
  const auto back = model::from_json(text, "matmul", "test:1", &why);
  REQUIRE(back);
  CHECK(back->fixed_s == m.fixed_s);
  CHECK(back->s_per_byte == m.s_per_byte);
  CHECK(back->s_per_flop == m.s_per_flop);
  CHECK(back->probes.size() == m.probes.size());
  CHECK(back->probes.back().shape == m.probes.back().shape);
  REQUIRE(back->checks.size() == 1);
  CHECK(back->checks[0].measured == 0.12);
  CHECK(back->trusted);

  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(text);
    edit(j);
    return j.dump();
  };
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"not JSON", "{\"v\":1,"},
      {"a negative coefficient", edited([](auto& j) { j["fixed_s"] = -1; })},
      {"a string coefficient", edited([](auto& j) { j["s_per_byte"] = "1e-10"; })},
      {"a missing field", edited([](auto& j) { j.erase("checks"); })},
      {"an extra field", edited([](auto& j) { j["bonus"] = 1; })},
      {"another version", edited([](auto& j) { j["v"] = 2; })},
      {"another device", edited([](auto& j) { j["device"] = "test:0"; })},
      {"one probe", edited([](auto& j) {
         while (j["probes"].size() > 1) j["probes"].erase(j["probes"].size() - 1);
       })},
      {"a zero-sized shape", edited([](auto& j) { j["probes"][0]["shape"][0] = 0; })},
      {"a probe of no time", edited([](auto& j) { j["probes"][0]["seconds"] = 0; })},
      {"17 checks", edited([](auto& j) {
         for (int i = 0; i < 16; ++i) j["checks"].push_back(j["checks"][0]);
       })},
      {"trusted despite a 14x check", edited([](auto& j) {
         j["checks"][0]["predicted"] = 0.663;
         j["checks"][0]["measured"] = 0.048;
       })},
  };
  for (const auto& [what, bad] : hostile) {
    INFO(what);
    std::string reason;
    CHECK_FALSE(model::from_json(bad, "matmul", "test:1", &reason));
    CHECK_FALSE(reason.empty());
  }
}

/// A calibration of axpy at n over the test devices of k, with models persisted in store.
struct Bench {
  Knobs k;
  vgpu::Runtime runtime;
  vgpu::detail::DeviceSource source;
  explicit Bench(Knobs knobs) : k(knobs), runtime(test_runtime_options(std::move(knobs))) {
    source.devices = [this] { return runtime.devices(); };
    source.backends = [this] { return runtime.backends(); };
    source.open = [this](const std::string& id) { return runtime.open(id); };
    source.backend_devices = [this](vgpu::BackendKind kind) { return runtime.backend_devices(kind); };
    source.scope = "test";
  }
  vgpu::Selection calibrate(const std::shared_ptr<vgpu::cache::DiskStore>& store, std::uint64_t n = 1u << 23) {
    const std::string op = "axpy";
    const Shape shape{n};
    const vgpu::PlanFactory factory = [](const vgpu::DeviceInfo& d, const Shape& s) {
      return vgpu::ops::plan("axpy", d, s);
    };
    return cal::calibrate(cal::Request{op, shape, factory, n, store}, source, {});
  }
  vgpu::DeviceInfo info(int i) { return runtime.devices().at(i); }
};

const vgpu::SelectionCandidate& candidate(const vgpu::Selection& s, const std::string& id) {
  for (const auto& c : s.candidates)
    if (c.device == id) return c;
  FAIL("no candidate " << id << " in\n" << s.describe());
  throw;  // unreachable
}

std::shared_ptr<vgpu::cache::DiskStore> store_in(const vgpu::test::TempDir& dir) {
  return std::make_shared<vgpu::cache::DiskStore>(vgpu::test::options_for(dir.path));
}

/// A model of axpy on info that predicts seconds at every size, trusted or not.
model::Model fixed_model(const vgpu::DeviceInfo& info, double seconds, bool trusted) {
  model::Model m = model::fit({point("axpy", {1u << 14}, seconds), point("axpy", {1u << 17}, seconds)});
  m.op = "axpy";
  m.device = info.id();
  if (!trusted) m.record_check({1u << 23}, seconds, seconds / 10);
  return m;
}

TEST_CASE("a slow link is fitted from probes, excludes the device, and a later calibration reuses the model",
          "[model][calibrate]") {
  vgpu::test::TempDir dir("model-fit-");
  auto store = store_in(dir);
  Bench b(test_devices({0, 0}, vgpu::test::unique_name("model-fit")));
  b.k[1]->ns_per_kib = 10000;  // 10 us per KiB: axpy 2^23 (96 MiB) takes ~1 s there
  const vgpu::Selection s = b.calibrate(store);
  INFO(s.describe());
  CHECK(s.device == "test:0");
  const auto& slow = candidate(s, "test:1");
  CHECK(slow.runs == 0);
  CHECK_THAT(slow.note, Catch::Matchers::ContainsSubstring("predicted by its model"));
  CHECK(slow.seconds > 0.5);
  const auto stored = model::load(*store, "axpy", b.info(1));
  REQUIRE(stored);
  CHECK(stored->trusted);
  CHECK(stored->probes.size() >= 2);
  // Every dispatch test:1 ran was a probe's (a warm-up and kProbeRuns each), never the real size.
  CHECK(b.k[1]->dispatches == stored->probes.size() * (1 + cal::kProbeRuns));

  const std::uint64_t before = b.k[1]->dispatches;
  const vgpu::Selection again = b.calibrate(store);
  INFO(again.describe());
  CHECK(candidate(again, "test:1").runs == 0);
  CHECK_THAT(candidate(again, "test:1").note, Catch::Matchers::ContainsSubstring("stored"));
  CHECK(b.k[1]->dispatches == before);  // not probed again
}

TEST_CASE("a device is excluded only by a trusted model", "[model][calibrate][trust]") {
  for (const bool trusted : {true, false}) {
    INFO("stored model trusted: " << trusted);
    vgpu::test::TempDir dir("model-trust-");
    auto store = store_in(dir);
    Bench b(test_devices({0, 0}, vgpu::test::unique_name("model-trust")));
    model::store(*store, b.info(1), fixed_model(b.info(1), 100.0, trusted));  // "100 s": hopeless
    const vgpu::Selection s = b.calibrate(store);
    INFO(s.describe());
    const auto& c = candidate(s, "test:1");
    if (trusted) {
      CHECK(c.runs == 0);
      CHECK(b.k[1]->dispatches == 0);  // excluded by the stored model alone
    } else {
      CHECK(c.runs > 0);  // run at the real size despite the prediction
      // Its note says why it ran (the separation phase appends its own to it).
      CHECK_THAT(c.note, Catch::Matchers::ContainsSubstring("untrusted"));
    }
  }
}

TEST_CASE("a check off by more than 2x is persisted: the model is untrusted in the next calibration",
          "[model][calibrate][trust]") {
  vgpu::test::TempDir dir("model-check-");
  auto store = store_in(dir);
  Bench b(test_devices({0, 0}, vgpu::test::unique_name("model-check")));
  // test:0 is the fast device to beat: ~10 ms for axpy 2^23's 96 MiB (simulated, as every test
  // device's cost is), so test:1 is near enough to be run at the real size and checked.
  b.k[0]->ns_per_kib = 100;
  b.k[1]->latency_us = 30000;                                           // 30 ms per call, at every size
  model::store(*store, b.info(1), fixed_model(b.info(1), 1e-4, true));  // says 0.1 ms: 300x off
  const vgpu::Selection s = b.calibrate(store);
  INFO(s.describe());
  CHECK(candidate(s, "test:1").runs > 0);
  const auto after = model::load(*store, "axpy", b.info(1));
  REQUIRE(after);
  CHECK_FALSE(after->trusted);
  REQUIRE(after->checks.size() == 1);
  CHECK(after->checks[0].measured > 10 * after->checks[0].predicted);
}

TEST_CASE("a damaged model entry is dropped with one warning and refitted", "[model][persist][calibrate]") {
  vgpu::test::TempDir dir("model-bad-");
  auto store = store_in(dir);
  Bench b(test_devices({0, 0}, vgpu::test::unique_name("model-bad")));
  b.k[1]->ns_per_kib = 10000;
  vgpu::detail::store_selection_text(*store, model::key_text("axpy", b.info(1)), "{\"v\":1,\"fixed_s\":-5}", 0);
  vgpu::Selection s;
  std::string err;
  {
    CaptureStderr cap;
    s = b.calibrate(store);
    err = cap.text();
  }
  INFO(s.describe() << err);
  std::size_t warnings = 0;
  for (auto at = err.find("ignoring the stored prediction model"); at != std::string::npos;
       at = err.find("ignoring the stored prediction model", at + 1))
    ++warnings;
  CHECK(warnings == 1);
  CHECK(b.k[1]->dispatches > 0);  // probed again
  const auto fresh = model::load(*store, "axpy", b.info(1));
  REQUIRE(fresh);  // and a sound one stored in its place
  CHECK(fresh->probes.size() >= 2);
}

}  // namespace
}  // namespace vgpu_test
