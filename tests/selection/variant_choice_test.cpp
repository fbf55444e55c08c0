// SPDX-License-Identifier: Apache-2.0
// tests/selection/variant_choice_test.cpp — the measured per-device variant choice
// (core/runtime/selection/variant_choice.hpp) on the software GPUs (lavapipe, llvmpipe), which offer matmul candidates
// only through kernels::set_software_candidates: a fresh cache measures and stores the choice, a fresh runtime on the
// same cache loads it without measuring, a damaged or hostile entry is dropped with one warning and measured again,
// VGPU_TUNE=rules never measures, a bad VGPU_TUNE fails with a Fix, and matmul is right under the chosen variant at
// awkward shapes.
#include <cmath>
#include <mutex>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cache_fixtures.hpp"
#include "support/catch.hpp"
#include "support/expect_error.hpp"
#include "support/logged_runtime.hpp"
#include "support/scoped_env.hpp"
#include "builtin_plans.hpp"
#include "device_core.hpp"
#include "registry.hpp"
#include "variant_choice.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/testing.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using vgpu::cache::DiskStore;
using vgpu::cache::EntryKind;
using vgpu::test::TempDir;

// Keeps the software opt-in on for one test (the kernels layer's test switch, not exported
// from libvgpu). Each runtime's devices start with no choice in memory, as a new process's.
struct OptIn {
  OptIn() { vgpu::kernels::set_software_candidates(true); }
  ~OptIn() { vgpu::kernels::set_software_candidates(false); }
};

// A runtime on dir (options from the environment) that keeps its log lines (info and up).
struct Logged : vgpu::test::LoggedRuntime {
  explicit Logged(const std::filesystem::path& dir) : LoggedRuntime(vgpu::RuntimeOptions::from_env(), dir) {}
};

// The software GPU devices of this machine (lavapipe, llvmpipe): ids.
std::vector<std::string> software_gpus() {
  std::vector<std::string> ids;
  vgpu::Runtime rt(vgpu::RuntimeOptions::from_env());
  for (const vgpu::DeviceInfo& d : rt.devices())
    if ((d.backend == vgpu::BackendKind::vulkan || d.backend == vgpu::BackendKind::opengl) &&
        d.type == vgpu::DeviceType::software)
      ids.push_back(d.id());
  return ids;
}

std::vector<vgpu::cache::DiskEntryInfo> variant_entries(const std::filesystem::path& dir) {
  std::vector<vgpu::cache::DiskEntryInfo> out;
  for (const auto& e : vgpu::test::entries(dir, EntryKind::selection, true))
    if (e.fingerprint_text.starts_with("variant;v=2;op=matmul;")) out.push_back(e);
  return out;
}

// Replaces the one variant entry's payload with text, resealed (valid checksums), as a tool
// or a hand edit would leave it.
void reseal(const std::filesystem::path& dir, const std::string& text) {
  const auto found = variant_entries(dir);
  REQUIRE(found.size() == 1);
  const vgpu::DeviceFingerprint fp{found[0].fingerprint_text, vgpu::cache::hash64(found[0].fingerprint_text)};
  const vgpu::cache::KernelKey key{std::stoull(found[0].key_hex.substr(0, 16), nullptr, 16),
                                   std::stoull(found[0].key_hex.substr(16), nullptr, 16)};
  DiskStore store(vgpu::test::options_for(dir));
  REQUIRE(store.store(EntryKind::selection, key, fp, std::vector<std::uint8_t>(text.begin(), text.end()), 1));
}

nlohmann::json stored_json(const std::filesystem::path& dir) {
  const auto found = variant_entries(dir);
  REQUIRE(found.size() == 1);
  const vgpu::DeviceFingerprint fp{found[0].fingerprint_text, vgpu::cache::hash64(found[0].fingerprint_text)};
  const vgpu::cache::KernelKey key{std::stoull(found[0].key_hex.substr(0, 16), nullptr, 16),
                                   std::stoull(found[0].key_hex.substr(16), nullptr, 16)};
  DiskStore store(vgpu::test::options_for(dir));
  const auto payload = store.load(EntryKind::selection, key, fp);
  REQUIRE(payload);
  return nlohmann::json::parse(payload->begin(), payload->end());
}

// The rule registered for info's backend (what the DeviceInfo forms of vgpu::ops use).
std::shared_ptr<const vgpu::OpTuner> rule_of(const vgpu::DeviceInfo& info) {
  return vgpu::detail::registered_op_tuner(info.backend);
}

// The name of the candidate of tuner (null: info's rule) whose options the plan carries ("" when none).
std::string variant_of(const vgpu::KernelPlan& plan, const vgpu::DeviceInfo& info, const vgpu::OpShape& shape,
                       std::shared_ptr<const vgpu::OpTuner> tuner = nullptr) {
  if (!tuner) tuner = rule_of(info);
  for (const vgpu::OpTuning& t : tuner->candidates(shape, info))
    if (t.options.defines == plan.options.defines && t.options.workgroup_size == plan.options.workgroup_size)
      return t.variant;
  return "";
}

constexpr std::uint32_t kM = 128, kK = 64, kN = 128;  // four candidates on a software device

// One matmul plan at the test shape on id through a runtime on dir; returns its variant.
std::string plan_once(Logged& l, const std::string& id) {
  vgpu::Device dev = l.runtime.open(id);
  const vgpu::KernelPlan p = vgpu::ops::matmul(dev, kM, kK, kN);
  return variant_of(p, dev.info(), vgpu::OpShape{"matmul", kM, kK, kN});
}

}  // namespace

TEST_CASE("software devices offer one matmul candidate unless a test opts in") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  vgpu::Runtime rt(vgpu::RuntimeOptions::from_env());
  const vgpu::DeviceInfo info = rt.open(ids[0]).info();
  const vgpu::OpShape shape{"matmul", 512, 512, 512};
  CHECK(rule_of(info)->candidates(shape, info).size() == 1);
  OptIn on;
  const auto c = rule_of(info)->candidates(shape, info);
  REQUIRE(c.size() == 4);
  CHECK(c[0].variant == rule_of(info)->tune(shape, info).variant);  // the rule's pick first
  for (std::size_t i = 0; i < c.size(); ++i)
    for (std::size_t j = i + 1; j < c.size(); ++j) CHECK(c[i].variant != c[j].variant);
  // The naive kernel (16³), and split-K, stay single.
  CHECK(rule_of(info)->candidates(vgpu::OpShape{"matmul", 16, 16, 16}, info).size() == 1);
  CHECK(rule_of(info)->candidates(vgpu::OpShape{"matmul", 8, 65536, 8}, info).size() == 1);
  CHECK(rule_of(info)->candidates(vgpu::OpShape{"add", 1, 1, 1 << 20}, info).size() == 1);
}

TEST_CASE("a plan from a DeviceInfo is pure: the rule's pick, nothing measured, though the device is open") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-pure-");
  Logged l(dir.path);
  vgpu::Device dev = l.runtime.open(ids[0]);
  const vgpu::OpShape shape{"matmul", kM, kK, kN};
  const std::string rule = rule_of(dev.info())->tune(shape, dev.info()).variant;
  // Before issue 30 this plan found the open device by its id and measured four candidates.
  const vgpu::KernelPlan pure = vgpu::ops::matmul(dev.info(), kM, kK, kN);
  CHECK(variant_of(pure, dev.info(), shape) == rule);
  CHECK(variant_of(vgpu::ops::plan("matmul", dev.info(), {kM, kK, kN}), dev.info(), shape) == rule);
  CHECK(dev.counters().variant_measurements == 0);
  CHECK(variant_entries(dir.path).empty());
  // The Device form measures on that device.
  (void)vgpu::ops::plan("matmul", dev, {kM, kK, kN});
  CHECK(dev.counters().variant_measurements == 4);
}

TEST_CASE("a fresh cache measures and stores the variant and a fresh runtime loads it without measuring") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-");
  for (const std::string& id : ids) {
    INFO(id);
    std::string first;
    {
      Logged l(dir.path);
      first = plan_once(l, id);
      INFO(l.all());
      CHECK(!first.empty());
      const auto c = l.runtime.open(id).counters();
      CHECK(c.variant_measurements == 4);
      CHECK(c.variant_loads == 0);
      CHECK(l.count("matmul 128x64x128 on " + id + ": " + first + " (measured 4 variants in ") == 1);
      // The same process asks again: from memory, nothing measured.
      CHECK(plan_once(l, id) == first);
      CHECK(l.runtime.open(id).counters().variant_measurements == 4);
    }
    {
      Logged l(dir.path);
      CHECK(plan_once(l, id) == first);
      INFO(l.all());
      const auto c = l.runtime.open(id).counters();
      CHECK(c.variant_measurements == 0);
      CHECK(c.variant_loads == 1);
      CHECK(l.count("measured") == 0);
    }
  }
  const auto found = variant_entries(dir.path);
  CHECK(found.size() == ids.size());
}

TEST_CASE("a 16-bit or TF32 matmul without variants of its own takes float32's measured choice, measuring nothing") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-dtype-");
  for (const std::string& id : ids) {
    INFO(id);
    Logged l(dir.path);
    const std::string first = plan_once(l, id);
    vgpu::Device dev = l.runtime.open(id);
    const auto measured = dev.counters().variant_measurements;
    CHECK(measured == 4);
    // The GLSL tuner offers no variant native to float16/bfloat16 and none in TF32: their plans
    // are float32's tiling (between conversions for 16-bit), found in memory.
    for (const auto& [op, dtype] : {std::pair{"matmul", vgpu::DType::f16}, std::pair{"matmul", vgpu::DType::bf16},
                                    std::pair{"matmul_tf32", vgpu::DType::f32}}) {
      INFO(op << " " << vgpu::numpy_name(dtype));
      const vgpu::KernelPlan p = vgpu::ops::plan(op, dev, {kM, kK, kN}, dtype);
      CHECK(variant_of(p, dev.info(), vgpu::OpShape{"matmul", kM, kK, kN}) == first);
      CHECK(p.kernel_count() == (dtype == vgpu::DType::f32 ? 1u : 3u));
    }
    CHECK(dev.counters().variant_measurements == measured);
  }
  // One stored choice per device (float32's); none keyed by a dtype or precision.
  CHECK(variant_entries(dir.path).size() == ids.size());
  for (const auto& e : vgpu::test::entries(dir.path, EntryKind::selection, true)) {
    CHECK(e.fingerprint_text.find(";dtype=") == std::string::npos);
    CHECK(e.fingerprint_text.find(";precision=") == std::string::npos);
  }
}

TEST_CASE("the variant key names a 16-bit dtype and TF32, and float32's key is as it always was") {
  vgpu::DeviceInfo info;
  info.backend = vgpu::BackendKind::cuda;
  info.fingerprint = vgpu::DeviceFingerprint{"fp", 0x1234};
  vgpu::OpTuning a, b;
  a.variant = "b";
  b.variant = "a";
  const std::vector<vgpu::OpTuning> candidates{a, b};
  const std::string f32 = vgpu::detail::variant_key_text(info, {"matmul", 1000, 64, 4096}, candidates);
  CHECK(f32 ==
        "variant;v=2;op=matmul;class=10x6x12;candidates=a|b;devices=" + info.id() + "=" + info.fingerprint.hex() + ",");
  vgpu::OpShape half{"matmul", 1000, 64, 4096, vgpu::DType::f16};
  CHECK(vgpu::detail::variant_key_text(info, half, candidates).starts_with("variant;v=2;op=matmul;dtype=f16;class="));
  vgpu::OpShape tf32{"matmul", 1000, 64, 4096};
  tf32.tf32 = true;
  CHECK(vgpu::detail::variant_key_text(info, tf32, candidates)
            .starts_with("variant;v=2;op=matmul;precision=tf32;class=10x6x12;"));
}

TEST_CASE("a damaged or hostile stored variant is dropped with one warning and measured again") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  const std::string id = ids[0];
  OptIn on;
  const std::vector<std::pair<std::string, std::function<std::string(nlohmann::json)>>> edits = {
      {"garbage", [](nlohmann::json) { return std::string("{not json"); }},
      {"not a candidate",
       [](nlohmann::json j) {
         j["variant"] = "999x1x1x1x1";
         return j.dump();
       }},
      {"wrong type",
       [](nlohmann::json j) {
         j["variant"] = 7;
         return j.dump();
       }},
      {"another key",
       [](nlohmann::json j) {
         j["key"] = "variant;v=2;op=matmul;class=1x1x1;devices=x=0,";
         return j.dump();
       }},
      {"array", [](nlohmann::json) { return std::string("[1,2]"); }}};
  for (const auto& [what, edit] : edits) {
    INFO(what);
    TempDir dir("variant-bad-");
    {
      Logged l(dir.path);
      plan_once(l, id);
    }
    reseal(dir.path, edit(stored_json(dir.path)));
    {
      Logged l(dir.path);
      const std::string v = plan_once(l, id);
      INFO(l.all());
      CHECK(!v.empty());
      CHECK(l.count("variant cache: ignoring the stored matmul variant for 128x64x128 on " + id) == 1);
      const auto c = l.runtime.open(id).counters();
      CHECK(c.variant_measurements == 4);
      CHECK(c.variant_loads == 0);
    }
    // The fresh entry is sound: the next runtime loads it.
    Logged l(dir.path);
    plan_once(l, id);
    CHECK(l.runtime.open(id).counters().variant_loads == 1);
    CHECK(l.count("ignoring") == 0);
  }
}

TEST_CASE("VGPU_TUNE=rules never measures and a bad VGPU_TUNE fails with a Fix") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-rules-");
  {
    vgpu_test::ScopedEnv rules("VGPU_TUNE", "rules");
    Logged l(dir.path);
    vgpu::Device dev = l.runtime.open(ids[0]);
    const vgpu::OpShape shape{"matmul", kM, kK, kN};
    CHECK(plan_once(l, ids[0]) == rule_of(dev.info())->tune(shape, dev.info()).variant);
    CHECK(dev.counters().variant_measurements == 0);
    CHECK(variant_entries(dir.path).empty());
  }
  vgpu_test::ScopedEnv bad("VGPU_TUNE", "fastest");
  REQUIRE_VGPU_ERROR(invalid_argument, "VGPU_TUNE='fastest'", vgpu::Runtime rt(vgpu::RuntimeOptions::from_env()));
  vgpu::RuntimeOptions o;
  REQUIRE_VGPU_ERROR(invalid_argument, "VGPU_TUNE", vgpu::Runtime rt(o));
}

TEST_CASE("matmul is right under the measured variant at awkward shapes") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-shapes-");
  Logged l(dir.path);
  struct Mkn {
    std::uint32_t m, k, n;
  };
  for (const std::string& id : ids) {
    vgpu::Device dev = l.runtime.open(id);
    for (const Mkn s :
         {Mkn{1, 17, 1000}, Mkn{17, 1000, 17}, Mkn{1000, 17, 100}, Mkn{100, 1000, 17}, Mkn{17, 17, 17}, Mkn{1, 1, 1}}) {
      INFO(id << " " << s.m << "x" << s.k << "x" << s.n);
      const auto before = dev.counters().variant_measurements;
      const vgpu::KernelPlan plan = vgpu::ops::matmul(dev, s.m, s.k, s.n);
      const vgpu::OpShape shape{"matmul", s.m, s.k, s.n};
      const std::size_t offered = rule_of(dev.info())->candidates(shape, dev.info()).size();
      CHECK(dev.counters().variant_measurements - before == (offered > 1 ? offered : 0));
      INFO("variant " << variant_of(plan, dev.info(), shape));
      std::mt19937 rng(s.m * 31 + s.k * 7 + s.n);
      std::uniform_real_distribution<float> u(-1, 1);
      std::vector<float> a(std::size_t{s.m} * s.k), b(std::size_t{s.k} * s.n), c(std::size_t{s.m} * s.n, NAN);
      for (float& x : a) x = u(rng);
      for (float& x : b) x = u(rng);
      vgpu::PersistentKernel pk(dev, plan);
      pk({vgpu::TensorArg(static_cast<const float*>(a.data()), {s.m, s.k}),
          vgpu::TensorArg(static_cast<const float*>(b.data()), {s.k, s.n}), vgpu::TensorArg(c.data(), {s.m, s.n})});
      std::size_t wrong = 0;
      for (std::uint32_t i = 0; i < s.m; ++i)
        for (std::uint32_t j = 0; j < s.n; ++j) {
          double want = 0;
          for (std::uint32_t q = 0; q < s.k; ++q) want += double(a[i * s.k + q]) * b[q * s.n + j];
          if (!(std::abs(c[i * s.n + j] - want) <= 1e-4 * s.k + 1e-5)) ++wrong;
        }
      CHECK(wrong == 0);
    }
  }
}

namespace {

// The GLSL tuner's candidates plus broken ones (a workgroup no device runs), at the given places.
class BreakingTuner final : public vgpu::OpTuner {
 public:
  BreakingTuner(std::shared_ptr<const vgpu::OpTuner> real, bool break_first)
      : real_(std::move(real)), first_(break_first) {}
  vgpu::OpTuning tune(const vgpu::OpShape& s, const vgpu::DeviceInfo& d) const override { return real_->tune(s, d); }
  std::vector<vgpu::OpTuning> candidates(const vgpu::OpShape& s, const vgpu::DeviceInfo& d) const override {
    std::vector<vgpu::OpTuning> c = real_->candidates(s, d);
    vgpu::OpTuning broken = c[0];
    broken.options.workgroup_size = {65536, 65536, 1};
    broken.variant = "broken";
    c.insert(c.begin() + 1, broken);
    if (first_) {
      c[0].options.workgroup_size = {65536, 65536, 1};
      c[0].variant = "broken-rule";
      c.resize(2);
    }
    return c;
  }

 private:
  std::shared_ptr<const vgpu::OpTuner> real_;
  bool first_;
};

}  // namespace

TEST_CASE("a variant that fails while measuring is skipped and never chosen") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-fail-");
  Logged l(dir.path);
  vgpu::Device dev = l.runtime.open(ids[0]);
  const vgpu::DeviceInfo& info = dev.info();
  const auto breaking = std::make_shared<BreakingTuner>(rule_of(info), false);
  const vgpu::OpShape shape{"matmul", kM, kK, kN};
  const vgpu::KernelPlan p =
      vgpu::detail::builtin_plan("matmul", info, breaking.get(), {kM, kK, kN}, &vgpu::detail::DeviceAccess::core(dev));
  INFO(l.all());
  const std::string chosen = variant_of(p, info, shape, breaking);
  CHECK(!chosen.empty());
  CHECK(chosen != "broken");
  CHECK(l.count("variant broken of matmul 128x64x128 failed on " + ids[0] + " while measuring") == 1);
  CHECK(dev.counters().variant_measurements == 4);  // the four that built
  CHECK(variant_entries(dir.path).size() == 1);

  // Every candidate failing: the rule's pick, a warning, nothing stored.
  TempDir dir2("variant-fail-");
  Logged l2(dir2.path);
  vgpu::Device dev2 = l2.runtime.open(ids[0]);
  const vgpu::DeviceInfo& info2 = dev2.info();
  const auto breaking2 = std::make_shared<BreakingTuner>(rule_of(info2), true);
  vgpu::detail::DeviceCore& core2 = vgpu::detail::DeviceAccess::core(dev2);
  const vgpu::KernelPlan p2 = vgpu::detail::builtin_plan("matmul", info2, breaking2.get(), {kM, kK, kN}, &core2);
  INFO(l2.all());
  CHECK(variant_of(p2, info2, shape, breaking2) == "broken-rule");
  CHECK(l2.count("every variant of matmul 128x64x128 failed on " + ids[0]) == 1);
  CHECK(variant_entries(dir2.path).empty());
  // The rest of the process keeps the rule's pick without measuring again.
  const auto before = dev2.counters().variant_measurements;
  vgpu::detail::builtin_plan("matmul", info2, breaking2.get(), {kM, kK, kN}, &core2);
  CHECK(dev2.counters().variant_measurements == before);
  CHECK(l2.count("every variant") == 1);
}

TEST_CASE("threads planning one shape at once measure it once") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  TempDir dir("variant-threads-");
  Logged l(dir.path);
  vgpu::Device dev = l.runtime.open(ids[0]);
  const vgpu::DeviceInfo info = dev.info();
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      got[i] = variant_of(vgpu::ops::matmul(dev, kM, kK, kN), info, vgpu::OpShape{"matmul", kM, kK, kN});
    });
  for (auto& t : threads) t.join();
  INFO(l.all());
  for (const auto& g : got) CHECK(g == got[0]);
  CHECK(!got[0].empty());
  CHECK(dev.counters().variant_measurements == 4);  // one flight: four candidates, once
  CHECK(l.count("measured 4 variants") == 1);
}

namespace {

// The GLSL tuner's candidates plus one that computes a wrong result fast: the 32x32 tiling
// told that one workgroup covers the whole of C, so it dispatches a single group, which fills
// only C's first 32x32 tile (issue 29: a tiling must be checked, not only timed).
class WrongTuner final : public vgpu::OpTuner {
 public:
  explicit WrongTuner(std::shared_ptr<const vgpu::OpTuner> real) : real_(std::move(real)) {}
  vgpu::OpTuning tune(const vgpu::OpShape& s, const vgpu::DeviceInfo& d) const override { return real_->tune(s, d); }
  std::vector<vgpu::OpTuning> candidates(const vgpu::OpShape& s, const vgpu::DeviceInfo& d) const override {
    std::vector<vgpu::OpTuning> c = real_->candidates(s, d);
    vgpu::OpTuning wrong = vgpu::kernels::glsl_matmul_tiling("32x32x16x4x4").tuning();
    wrong.per_group_x = wrong.per_group_y = 1u << 20;
    wrong.variant = "wrong-fast";
    // A define the kernel ignores, so that variant_of tells it from the real 32x32x16x4x4
    // tiling, which has the same source and workgroup: where that real tiling is the fastest
    // right one (CI's machine), the test read it as "wrong-fast" and failed.
    wrong.options.defines["VGPU_TEST_WRONG_FAST"] = "1";
    c.insert(c.begin() + 1, wrong);
    return c;
  }

 private:
  std::shared_ptr<const vgpu::OpTuner> real_;
};

}  // namespace

TEST_CASE("a variant that computes a wrong result is never chosen, and the stored choice says why") {
  const auto ids = software_gpus();
  if (ids.empty()) {
    WARN("skipped: no lavapipe/llvmpipe device");
    return;
  }
  OptIn on;
  for (const std::string& id : ids) {
    INFO(id);
    TempDir dir("variant-wrong-");
    Logged l(dir.path);
    vgpu::Device dev = l.runtime.open(id);
    const vgpu::DeviceInfo& info = dev.info();
    const auto wrong = std::make_shared<WrongTuner>(rule_of(info));
    // 256x64x256: the real tilings run 4 to 64 workgroups, the wrong one a single 32x32 tile,
    // so it is by far the fastest: measured by time alone, it would be chosen.
    const vgpu::OpShape shape{"matmul", 256, 64, 256};
    const vgpu::KernelPlan p =
        vgpu::detail::builtin_plan("matmul", info, wrong.get(), {256, 64, 256}, &vgpu::detail::DeviceAccess::core(dev));
    INFO(l.all());
    const std::string chosen = variant_of(p, info, shape, wrong);
    CHECK(!chosen.empty());
    CHECK(chosen != "wrong-fast");
    CHECK(l.count("variant wrong-fast of matmul 256x64x256 computed a wrong result on " + id) == 1);
    const nlohmann::json stored = stored_json(dir.path);
    CHECK(stored["variant"] == chosen);
    bool recorded = false;
    for (const auto& m : stored["measured"])
      if (m["variant"] == "wrong-fast") recorded = m.contains("rejected");
    CHECK(recorded);
  }
}
