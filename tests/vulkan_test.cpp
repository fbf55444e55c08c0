// tests/vulkan_test.cpp — the Vulkan backend end to end (lavapipe in CI, so sizes stay small):
// the SPIR-V source tiers (L3 embedded → L2 on disk → run-time GLSL compile), user GLSL kernels
// and their compile errors, the L2 across processes (vgpu-test-backend-child) including damaged
// and foreign entries, steady state of persistent kernels, batch resubmission, threads, and
// what the device reports about itself.
//
// Every test needs a Vulkan device. Without one, main() prints the reason and exits 77, which
// ctest reports as a skip (SKIP_RETURN_CODE), never as a pass.
//
// The ctest entries run with a private VGPU_CACHE_DIR per test case (tests/CMakeLists.txt);
// DiskStore::global() reads it once per process, so tests that need a fresh or a damaged
// store use the child program with their own temporary directory.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/helper_path.hpp"
#include "support/catch_session.hpp"
#include "support/expect_error.hpp"
#include "support/numerics.hpp"
#include "support/plan_runner.hpp"
#include "support/scale_add_kernel.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_BACKEND_CHILD
#error "VGPU_BACKEND_CHILD (path of vgpu-test-backend-child) must be defined by the build"
#endif
#ifndef VGPU_TEST_TMP_ROOT
#error "VGPU_TEST_TMP_ROOT must be defined by the build"
#endif

namespace vgpu_test {
namespace {

namespace fs = std::filesystem;
using vgpu::test::ChildRun;
using vgpu::test::entries;
using vgpu::test::only;
using vgpu::test::options_for;
using vgpu::test::quoted;
using vgpu::test::TempDir;
using vgpu::test::why_unavailable;
using vgpu::cache::DiskStore;
using vgpu::cache::DiskStoreOptions;
using vgpu::cache::EntryKind;
using vgpu::cache::KernelKey;
using Bytes = std::vector<std::uint8_t>;

// ---------------------------------------------------------------------------------------------
// Devices


/// The runtime shared by tests that need no fresh device (main() probes it first).
vgpu::Runtime& shared_runtime() {
  static vgpu::Runtime runtime(only(vgpu::BackendKind::vulkan));
  return runtime;
}

vgpu::Device vulkan_device() { return shared_runtime().open("vulkan:0"); }

/// Returns "" when a Vulkan device can be opened here, else why not.
std::string why_no_vulkan() { return why_unavailable(shared_runtime(), vgpu::BackendKind::vulkan); }

bool is_lavapipe(const vgpu::DeviceInfo& info) { return info.name.find("llvmpipe") != std::string::npos; }

// ---------------------------------------------------------------------------------------------
// The user kernel: out[i] = a[i] * p.scale + b[i], from support/scale_add_kernel.hpp, which the
// child program builds too (the cross-process tests compare the keys both sides compute).

/// The scale-add kernel for Vulkan with glsl as its body (tests vary the body).
vgpu::KernelSource make_source(const std::string& glsl) { return scale_add_source(vgpu::BackendKind::vulkan, glsl); }

/// Runs the scale-add kernel on n random elements (scale_add_kernel.hpp's run_scale_add) and
/// checks the result against a double reference and the guard elements past n.
void check_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n, std::uint32_t wg) {
  INFO("n = " << n << ", workgroup " << wg);
  const ScaleAddResult r = run_scale_add(device, kernel, n, wg);
  INFO(r.values.describe());
  CHECK(r.values.ok());
  CHECK(r.guard_changed == 0);
}

// ---------------------------------------------------------------------------------------------
// Files, directories and the child process

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(out.good());
}

/// Runs the child on kScaleAddGlsl with the L2 store in cache_dir (disabled when asked), with
/// no other cache settings from this process's environment.
ChildRun run_child(const fs::path& cache_dir, bool disable = false) {
  return vgpu::test::run_backend_child(vgpu::test::helper_path(VGPU_BACKEND_CHILD), "vulkan",
                                       cache_dir.parent_path() / (cache_dir.filename().string() + ".glsl"),
                                       kScaleAddGlsl, cache_dir, disable, kChildN);
}

/// A fresh cache directory inside a TempDir (the child's GLSL file sits beside it).
fs::path cache_dir_in(const TempDir& tmp) { return tmp.path / "cache"; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. L3

TEST_CASE("L3: every built-in op compiles from embedded SPIR-V with no GLSL compile", "[vulkan][l3]") {
  CHECK(vgpu::cache::precompiled_spirv_count() == 6);

  vgpu::Runtime runtime(only(vgpu::BackendKind::vulkan));  // a new device: its L1 is empty
  vgpu::Device device = runtime.open("vulkan:0");
  const vgpu::DeviceInfo& info = device.info();
  const std::vector<vgpu::KernelPlan> plans = {
      vgpu::ops::matmul(info, 33, 17, 45), vgpu::ops::axpy(info, 1000),          vgpu::ops::add(info, 1000),
      vgpu::ops::mul(info, 1000),          vgpu::ops::reduce_sum(info, 100000), vgpu::ops::softmax_rows(info, 15, 17)};
  std::set<std::string> keys;
  for (const auto& p : plans)
    keys.insert(vgpu::cache::make_kernel_key(p.source, *p.source.find(vgpu::dialect::glsl), p.options, info.fingerprint).hex());
  REQUIRE(keys.size() == 6);  // add and mul share a body but not their defines

  const vgpu::CounterSnapshot before = device.counters();
  for (const auto& p : plans) {
    INFO(p.source.name);
    const vgpu::Kernel k = device.compile(p.source, p.options);
    CHECK(keys.count(k.key_hex()) == 1);
  }
  vgpu::CounterSnapshot d = device.counters() - before;
  INFO("first compiles: " << d.to_string());
  CHECK(d.source_compiles == 0);
  CHECK(d.l3_hits == keys.size());
  CHECK(d.compiles == keys.size());
  CHECK(d.l1_misses == keys.size());
  CHECK(d.l2_hits == 0);  // L3 answers before the disk store is asked
  CHECK(d.l2_misses == 0);

  // Again, and other shapes of the same ops: all L1 hits, no tier below is asked.
  const vgpu::CounterSnapshot before2 = device.counters();
  for (const auto& p : plans) device.compile(p.source, p.options);
  for (const auto& p : {vgpu::ops::matmul(info, 64, 64, 64), vgpu::ops::add(info, 7), vgpu::ops::reduce_sum(info, 3)})
    device.compile(p.source, p.options);
  d = device.counters() - before2;
  INFO("second compiles: " << d.to_string());
  CHECK(d.l1_hits == plans.size() + 3);
  CHECK(d.compiles == 0);
  CHECK(d.l3_hits == 0);
  CHECK(d.source_compiles == 0);

  // The embedded SPIR-V computes the right thing.
  HostTensors mm{random_floats(33 * 17, 1), random_floats(17 * 45, 2), std::vector<float>(33 * 45)};
  run_raw(device, plans[0], mm);
  const Comparison cm = compare(mm[2], matmul_reference(mm[0], mm[1], 33, 17, 45));
  INFO("matmul: " << cm.describe());
  CHECK(cm.ok());
  HostTensors sm{random_floats(15 * 17, 3), std::vector<float>(15 * 17)};
  run_raw(device, plans[5], sm);
  const Comparison cs = compare(sm[1], softmax_reference(sm[0], 15, 17));
  INFO("softmax: " << cs.describe());
  CHECK(cs.ok());
}

// ---------------------------------------------------------------------------------------------
// 2. User GLSL kernels

TEST_CASE("user GLSL kernel: right at awkward sizes, compiled once, then an L1 hit", "[vulkan][user]") {
  vgpu::Device device = vulkan_device();
  // A comment unique to this process gives a key no earlier run stored in L2, so the first
  // compile must run the GLSL front end.
  const std::string nonce = "// run " + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
  const vgpu::KernelSource source = make_source(nonce + kScaleAddGlsl);
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};

  const vgpu::CounterSnapshot before = device.counters();
  const vgpu::Kernel kernel = device.compile(source, options);
  vgpu::CounterSnapshot d = device.counters() - before;
  INFO("first compile: " << d.to_string());
  CHECK(d.source_compiles == 1);
  CHECK(d.compiles == 1);
  CHECK(d.l1_misses == 1);
  CHECK(d.l3_hits == 0);
  CHECK(d.l2_hits == 0);
  if (DiskStore::global().enabled()) {
    CHECK(d.l2_misses == 1);
    CHECK(d.l2_writes >= 1);  // the SPIR-V (and possibly the pipeline cache)
  }

  const vgpu::CounterSnapshot before2 = device.counters();
  const vgpu::Kernel again = device.compile(source, options);
  d = device.counters() - before2;
  INFO("second compile: " << d.to_string());
  CHECK(d.source_compiles == 0);
  CHECK(d.compiles == 0);
  CHECK(d.l1_hits == 1);
  CHECK(again.key_hex() == kernel.key_hex());

  for (std::uint32_t n : {1u, 255u, 1000u, 65537u}) check_scale_add(device, kernel, n, 64);
}

TEST_CASE("user GLSL kernel: compile errors carry the log and line, and the device keeps working",
          "[vulkan][user][errors]") {
  vgpu::Device device = vulkan_device();
  vgpu::KernelSource undeclared = make_source(
      "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
      "layout(std430, binding = 0) buffer Buf { float v[]; };\n"
      "void main() {\n"
      "  v[0] = p.scale * no_such_variable;\n"
      "}\n");
  undeclared.name = "test.vk_undeclared";
  undeclared.bindings.resize(1);
  vgpu::KernelSource syntax = make_source("void main() { int x = ; }\n");
  syntax.name = "test.vk_syntax";
  syntax.bindings.clear();
  syntax.params_size = 0;

  const vgpu::CounterSnapshot before = device.counters();
  REQUIRE_VGPU_ERROR(compile_error, "no_such_variable", device.compile(undeclared));
  REQUIRE_VGPU_ERROR(compile_error, "test.vk_undeclared:4:", device.compile(undeclared));
  REQUIRE_VGPU_ERROR(compile_error, "test.vk_syntax:1:", device.compile(syntax));
  REQUIRE_VGPU_ERROR(compile_error, "syntax error", device.compile(syntax));
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.source_compiles == 0);  // counts only compiles that produced SPIR-V
  CHECK(d.compiles == 0);
  CHECK(d.l2_writes == 0);        // nothing is cached for a failed compile

  // The same device still compiles and runs a good kernel.
  const vgpu::Kernel good = device.compile(make_source(kScaleAddGlsl), scale_add_options());
  check_scale_add(device, good, 1000, 64);
}

// ---------------------------------------------------------------------------------------------
// 3. L2 across processes

TEST_CASE("L2 across processes: the second process loads the first one's SPIR-V", "[vulkan][l2][processes]") {
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);

  vgpu::test::check_compiled_and_stored(run_child(dir));
  vgpu::test::check_single_entry(dir, EntryKind::spirv, scale_add_key(vulkan_device().info()),
                                 vulkan_device().info().fingerprint);
  vgpu::test::check_loaded_from_l2(run_child(dir));
}

TEST_CASE("L2 across processes: VGPU_CACHE_DISABLE=1 compiles every time and writes nothing",
          "[vulkan][l2][processes]") {
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(dir, true);
    INFO("run " << run << ":\n" << r.output);
    REQUIRE(r.ok());
    CHECK(r.count("source_compiles") == 1);
    CHECK(r.count("l2_hits") == 0);
    CHECK(r.count("l2_writes") == 0);
    CHECK(r.count("store_writes") == 0);
  }
  CHECK(DiskStore(options_for(dir)).list(false).empty());
}

// ---------------------------------------------------------------------------------------------
// 4. Damaged and foreign L2 entries on the Vulkan path

TEST_CASE("L2 damage: a corrupted SPIR-V payload is rejected, recompiled and replaced", "[vulkan][l2][corrupt]") {
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  const ChildRun first = run_child(dir);
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());

  const auto spirv = entries(dir, EntryKind::spirv, false);
  REQUIRE(spirv.size() == 1);
  REQUIRE(spirv[0].payload_bytes > 0);
  REQUIRE(spirv[0].file_bytes > spirv[0].payload_bytes);
  Bytes file = read_bytes(spirv[0].path);
  REQUIRE(file.size() == spirv[0].file_bytes);
  for (std::size_t i = file.size() - spirv[0].payload_bytes; i < file.size(); ++i) file[i] ^= 0x5a;
  write_bytes(spirv[0].path, file);

  const ChildRun second = run_child(dir);
  INFO("run on the damaged entry:\n" << second.output);
  REQUIRE(second.ok());  // a bad cache costs a recompile, never a wrong result
  CHECK(second.count("source_compiles") == 1);
  CHECK_THAT(second.text("store_rejected"), Catch::Matchers::Contains("checksum:1"));
  CHECK(second.count("l2_writes") >= 1);

  // The recompile stored a good entry again.
  const ChildRun third = run_child(dir);
  INFO("run after the repair:\n" << third.output);
  REQUIRE(third.ok());
  CHECK(third.count("source_compiles") == 0);
  CHECK(third.text("store_rejected") == "none");
}

TEST_CASE("L2 damage: a well-formed entry that is not SPIR-V is rejected and recompiled",
          "[vulkan][l2][corrupt]") {
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  vgpu::Device device = vulkan_device();
  {
    DiskStore store(options_for(dir));
    const std::string text = "this is not SPIR-V, just 40 bytes of text";
    const Bytes payload(text.begin(), text.begin() + 40);
    REQUIRE(store.store(EntryKind::spirv, scale_add_key(device.info()), device.info().fingerprint, payload, 1));
  }
  const ChildRun run = run_child(dir);
  INFO(run.output);
  REQUIRE(run.ok());
  CHECK(run.count("source_compiles") == 1);
  CHECK(run.count("l2_hits") == 0);  // the store's payload check refused it (not SPIR-V)
  CHECK(run.count("l2_rejected") == 1);
  CHECK_THAT(run.text("store_rejected"), Catch::Matchers::Contains("invalid:1"));

  const ChildRun again = run_child(dir);
  INFO(again.output);
  REQUIRE(again.ok());
  CHECK(again.count("source_compiles") == 0);
  CHECK(again.count("l2_rejected") == 0);
}

TEST_CASE("L2 damage: a garbage pipeline-cache entry is rejected before the driver sees it", "[vulkan][l2][corrupt]") {
  // In process: the global store is this test's private directory (ctest environment).
  DiskStore& store = DiskStore::global();
  if (!store.enabled()) {
    WARN("the L2 store is disabled here (VGPU_CACHE_DISABLE or an unusable VGPU_CACHE_DIR); nothing to test");
    return;
  }
  vgpu::Runtime probe(only(vgpu::BackendKind::vulkan));
  const vgpu::DeviceInfo info = probe.devices().at(0);
  const KernelKey key{vgpu::cache::hash64("vk-pipeline-cache"), info.fingerprint.hash};
  Bytes garbage(256);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 37 + 11);
  REQUIRE(store.store(EntryKind::vk_pipeline_cache, key, info.fingerprint, garbage, 0));

  // The store's payload check refuses it (its header size is not 32): "invalid".
  const auto header_rejects = [&] {
    const auto r = store.stats().rejected;
    const auto it = r.find("invalid");
    return it == r.end() ? std::uint64_t{0} : it->second;
  };
  const std::uint64_t rejected_before = header_rejects();
  vgpu::Runtime runtime(only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");  // must not throw or crash

  // The device works; a built-in and a user kernel give right results. The pipeline cache is
  // read (and checked) at the device's first compile.
  const auto plan = vgpu::ops::add(device.info(), 1000);
  HostTensors args{random_floats(1000, 7), random_floats(1000, 8), std::vector<float>(1000)};
  run_raw(device, plan, args);
  CHECK(header_rejects() == rejected_before + 1);
  const Comparison c = compare(args[2], binary_reference(args[0], args[1], false));
  INFO(c.describe());
  CHECK(c.ok());
  check_scale_add(device, device.compile(make_source(kScaleAddGlsl), scale_add_options()), 1000, 64);
}

TEST_CASE("L2 damage: a pipeline-cache blob with this device's header but a garbage body is survived",
          "[vulkan][l2][corrupt]") {
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  const ChildRun first = run_child(dir);
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());
  vgpu::Device device = vulkan_device();
  const KernelKey key{vgpu::cache::hash64("vk-pipeline-cache"), device.info().fingerprint.hash};
  {
    DiskStore store(options_for(dir));
    auto blob = store.load(EntryKind::vk_pipeline_cache, key, device.info().fingerprint);
    if (!blob || blob->size() < 32) {
      WARN("the driver saved no pipeline cache; nothing to damage");
      return;
    }
    // Keep the 32-byte header the backend checks (device and cache UUID), then 4 KiB of noise.
    blob->resize(32 + 4096);
    std::uint32_t state = 2463534242u;
    for (std::size_t i = 32; i < blob->size(); ++i) {
      state ^= state << 13, state ^= state >> 17, state ^= state << 5;
      (*blob)[i] = static_cast<std::uint8_t>(state);
    }
    REQUIRE(store.store(EntryKind::vk_pipeline_cache, key, device.info().fingerprint, *blob, 0));
  }
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(dir);
    INFO("run " << run << " on the damaged pipeline cache:\n" << r.output);
    CHECK(r.ok());
    CHECK(r.count("source_compiles") == 0);  // the SPIR-V entry is untouched
  }
}

// Regression tests for backend bugs found while writing this suite.

TEST_CASE("an L2 SPIR-V entry with the magic but a broken body is rejected and recompiled",
          "[vulkan][l2][corrupt]") {
  // Found before payloads were validated: vkCreateShaderModule accepted it (lavapipe does not
  // validate SPIR-V) and the pipeline build failed. Now the store's validator refuses it; either
  // way compile() must reject the entry and recompile, not fail in every later process.
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  vgpu::Device device = vulkan_device();
  {
    std::vector<std::uint32_t> words(64);
    std::uint32_t state = 88172645u;
    for (auto& w : words) state ^= state << 13, state ^= state >> 17, state ^= state << 5, w = state;
    words[0] = 0x07230203;  // the SPIR-V magic
    Bytes payload(words.size() * 4);
    std::memcpy(payload.data(), words.data(), payload.size());
    DiskStore store(options_for(dir));
    REQUIRE(store.store(EntryKind::spirv, scale_add_key(device.info()), device.info().fingerprint, payload, 1));
  }
  const ChildRun run = run_child(dir);
  INFO(run.output);
  CHECK(run.ok());
  CHECK(run.count("source_compiles") == 1);
  CHECK(run.count("l2_rejected") == 1);
  const ChildRun again = run_child(dir);
  INFO(again.output);
  CHECK(again.ok());
  CHECK(again.count("source_compiles") == 0);
}

TEST_CASE("L2 rejections are counted in Device::counters().l2_rejected", "[vulkan][l2][counters]") {
  // counters.hpp: l2_rejected counts "on-disk entries dropped (bad header/checksum, driver
  // refused)": (1) a SPIR-V entry DiskStore drops for its checksum, and (2) the pipeline-cache
  // entry, which must be loaded once core has attached the device's counters.
  TempDir tmp("vk-");
  const fs::path dir = cache_dir_in(tmp);
  REQUIRE(run_child(dir).ok());
  const auto spirv = entries(dir, EntryKind::spirv, false);
  REQUIRE(spirv.size() == 1);
  Bytes file = read_bytes(spirv[0].path);
  file.back() ^= 0xff;
  write_bytes(spirv[0].path, file);
  const ChildRun run = run_child(dir);
  INFO(run.output);
  REQUIRE(run.ok());
  REQUIRE_THAT(run.text("store_rejected"), Catch::Matchers::Contains("checksum:1"));
  CHECK(run.count("l2_rejected") == 1);  // (1)

  DiskStore& store = DiskStore::global();
  if (!store.enabled()) return;
  vgpu::Runtime probe(only(vgpu::BackendKind::vulkan));
  const vgpu::DeviceInfo info = probe.devices().at(0);
  const Bytes garbage(64, 0xee);
  REQUIRE(store.store(EntryKind::vk_pipeline_cache, KernelKey{vgpu::cache::hash64("vk-pipeline-cache"), info.fingerprint.hash},
                      info.fingerprint, garbage, 0));
  vgpu::Runtime runtime(only(vgpu::BackendKind::vulkan));
  vgpu::Device device = runtime.open("vulkan:0");
  const auto plan = vgpu::ops::add(device.info(), 16);  // the first compile reads the pipeline cache
  device.compile(plan.source, plan.options);
  CHECK(device.counters().l2_rejected == 1);  // (2)
}

// ---------------------------------------------------------------------------------------------
// 5. Steady state

namespace {

struct SteadyOp {
  vgpu::KernelPlan plan;
  HostTensors args;
  std::function<void(HostTensors&, std::uint64_t)> new_data;
  std::function<Reference(const HostTensors&)> reference;
  std::size_t output;
};

void poke(std::vector<float>& v, std::uint64_t i) {
  for (std::uint64_t j = 0; j < 3; ++j) v[(i * 7919 + j * 104729) % v.size()] = static_cast<float>((i + j) % 13) * 0.25f - 1.5f;
}

void check_steady(vgpu::Device& device, SteadyOp op) {
  constexpr std::uint64_t kCalls = 200;
  INFO(op.plan.source.name);
  vgpu::PersistentKernel kernel(device, op.plan);
  call(kernel, op.args);
  const std::uint64_t steps = op.plan.steps.size();
  const vgpu::CounterSnapshot before = device.counters();
  for (std::uint64_t i = 0; i < kCalls; ++i) {
    op.new_data(op.args, i);
    call(kernel, op.args);
  }
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(kCalls << " calls: " << d.to_string());
  CHECK(d.compiles == 0);
  CHECK(d.source_compiles == 0);
  CHECK(d.l1_hits + d.l1_misses == 0);
  CHECK(d.l2_hits + d.l2_misses + d.l3_hits == 0);
  CHECK(d.allocations == 0);
  CHECK(d.binds == 0);
  CHECK(d.submits == kCalls);
  CHECK(d.dispatches == kCalls * steps);
  const Comparison c = compare(op.args[op.output], op.reference(op.args));
  INFO("last call: " << c.describe());
  CHECK(c.ok());
}

}  // namespace

TEST_CASE("steady state on Vulkan: 200 calls with new data compile, allocate and bind nothing", "[vulkan][steady]") {
  vgpu::Device device = vulkan_device();
  const vgpu::DeviceInfo& info = device.info();
  check_steady(device, {vgpu::ops::matmul(info, 64, 64, 64),
                        {random_floats(64 * 64, 11), random_floats(64 * 64, 12), std::vector<float>(64 * 64)},
                        [](HostTensors& a, std::uint64_t i) { poke(a[i % 2], i); },
                        [](const HostTensors& a) { return matmul_reference(a[0], a[1], 64, 64, 64); }, 2});
  check_steady(device, {vgpu::ops::reduce_sum(info, 100000), {random_floats(100000, 13), {0.0f}},
                        [](HostTensors& a, std::uint64_t i) { poke(a[0], i); },
                        [](const HostTensors& a) { return sum_reference(a[0]); }, 1});
  check_steady(device, {vgpu::ops::softmax_rows(info, 15, 17), {random_floats(15 * 17, 14), std::vector<float>(15 * 17)},
                        [](HostTensors& a, std::uint64_t i) { poke(a[0], i); },
                        [](const HostTensors& a) { return softmax_reference(a[0], 15, 17); }, 1});
}

// ---------------------------------------------------------------------------------------------
// 6. Batch resubmission

TEST_CASE("batch: three dependent dispatches recorded once, resubmitted with new data", "[vulkan][batch]") {
  vgpu::Device device = vulkan_device();
  const vgpu::DeviceInfo& info = device.info();
  constexpr std::uint32_t n = 1000;
  const auto axpy = vgpu::ops::axpy(info, n);
  const auto add = vgpu::ops::add(info, n);
  const vgpu::Kernel kaxpy = device.compile(axpy.source, axpy.options);
  const vgpu::Kernel kadd = device.compile(add.source, add.options);
  vgpu::Buffer a1 = device.create_buffer(4), a2 = device.create_buffer(4);
  vgpu::Buffer x = device.create_buffer(n * 4), y = device.create_buffer(n * 4), z = device.create_buffer(n * 4),
               o = device.create_buffer(n * 4);
  // y = a1*x + y;  z = a2*y + z (reads the new y);  o = y + z (reads both).
  vgpu::Batch batch = device.create_batch();
  batch.dispatch(kaxpy, device.bind(kaxpy, {{0, a1}, {1, x}, {2, y}}), axpy.steps[0].params, axpy.steps[0].groups);
  batch.dispatch(kaxpy, device.bind(kaxpy, {{0, a2}, {1, y}, {2, z}}), axpy.steps[0].params, axpy.steps[0].groups);
  batch.dispatch(kadd, device.bind(kadd, {{0, y}, {1, z}, {2, o}}), add.steps[0].params, add.steps[0].groups);
  REQUIRE(batch.size() == 3);

  struct Inputs {
    float a1, a2;
    std::vector<float> x, y, z;
  };
  // Submits the batch once and checks y, z, o against in (the values the batch starts from).
  auto submit_and_check = [&](const Inputs& in, const char* what) {
    INFO(what);
    const vgpu::CounterSnapshot before = device.counters();
    device.submit(batch);
    std::vector<float> gy(n, kNaN), gz(n, kNaN), go(n, kNaN);
    device.read(y, gy.data(), n * 4);
    device.read(z, gz.data(), n * 4);
    device.read(o, go.data(), n * 4);
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.submits == 1);
    CHECK(d.dispatches == 3);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    // Error bounds: each axpy adds ≤ 2 eps of its operands, and the earlier error carries
    // through (scaled by a2 for z); the add adds ≤ 2 eps of its result.
    Reference ry, rz, ro;
    for (std::uint32_t i = 0; i < n; ++i) {
      const double yv = static_cast<double>(in.a1) * in.x[i] + in.y[i];
      const double by = 2 * kEps32 * (std::abs(static_cast<double>(in.a1) * in.x[i]) + std::abs(in.y[i]));
      const double zv = static_cast<double>(in.a2) * yv + in.z[i];
      const double bz = 2 * kEps32 * (std::abs(in.a2 * yv) + std::abs(in.z[i])) + std::abs(in.a2) * by;
      ry.value.push_back(yv), ry.bound.push_back(2 * by);
      rz.value.push_back(zv), rz.bound.push_back(2 * bz);
      ro.value.push_back(yv + zv), ro.bound.push_back(2 * (by + bz + 2 * kEps32 * std::abs(yv + zv)));
    }
    const Comparison cy = compare(gy, ry), cz = compare(gz, rz), co = compare(go, ro);
    INFO("y: " << cy.describe() << "\nz: " << cz.describe() << "\no: " << co.describe());
    CHECK(cy.ok());
    CHECK(cz.ok());
    CHECK(co.ok());
    return std::make_pair(gy, gz);
  };
  auto upload = [&](const Inputs& in) {
    device.write(a1, &in.a1, 4);
    device.write(a2, &in.a2, 4);
    device.write(x, in.x.data(), n * 4);
    device.write(y, in.y.data(), n * 4);
    device.write(z, in.z.data(), n * 4);
  };

  const Inputs first{0.5f, -2.0f, random_floats(n, 21), random_floats(n, 22), random_floats(n, 23)};
  upload(first);
  submit_and_check(first, "first submit");

  const Inputs second{3.0f, 0.25f, random_floats(n, 31), random_floats(n, 32), random_floats(n, 33)};
  upload(second);
  const auto [y2, z2] = submit_and_check(second, "second submit with new data");

  // Without new data the batch runs again on its own results: y and z accumulate.
  const Inputs third{second.a1, second.a2, second.x, y2, z2};
  submit_and_check(third, "third submit on the batch's own results");
}

// ---------------------------------------------------------------------------------------------
// 7. Threads

TEST_CASE("threads: four persistent add kernels on one Vulkan device, 50 calls each", "[vulkan][threads]") {
  vgpu::Device device = vulkan_device();
  constexpr std::uint32_t n = 4097, kThreads = 4, kCalls = 50;
  const vgpu::CounterSnapshot before = device.counters();
  std::atomic<std::uint64_t> wrong{0}, calls{0};
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        vgpu::PersistentKernel kernel(device, vgpu::ops::add(device.info(), n));
        std::vector<float> a(n), b(n), out(n);
        for (std::uint32_t c = 0; c < kCalls; ++c) {
          // Small integers and halves: every sum is exact, so any mix-up between threads shows.
          for (std::uint32_t i = 0; i < n; ++i) {
            a[i] = static_cast<float>(t * 100000 + c * 1000 + i % 997);
            b[i] = static_cast<float>(i % 13) * 0.5f;
          }
          std::fill(out.begin(), out.end(), kNaN);
          kernel({vgpu::TensorArg(static_cast<const float*>(a.data()), {n}),
                  vgpu::TensorArg(static_cast<const float*>(b.data()), {n}), vgpu::TensorArg(out.data(), {n})});
          for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];
          ++calls;
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.push_back(e.what());
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) FAIL_CHECK("thread failed: " << e);
  CHECK(calls == kThreads * kCalls);
  CHECK(wrong == 0);
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.compiles <= 1);  // one shared kernel (single-flight L1), unless an earlier test built it
  CHECK(d.compiles + d.l1_hits == kThreads);
  CHECK(d.allocations == kThreads * 3);
  CHECK(d.binds == kThreads);
  CHECK(d.submits == kThreads * kCalls);
  CHECK(d.dispatches == kThreads * kCalls);
}

// ---------------------------------------------------------------------------------------------
// 8. What the device reports

TEST_CASE("device info: type, stable fingerprint, non-zero limits", "[vulkan][info]") {
  vgpu::Runtime r1(only(vgpu::BackendKind::vulkan)), r2(only(vgpu::BackendKind::vulkan));
  const auto d1 = r1.devices(), d2 = r2.devices();
  REQUIRE(!d1.empty());
  REQUIRE(d1.size() == d2.size());
  for (std::size_t i = 0; i < d1.size(); ++i) {
    const vgpu::DeviceInfo& info = d1[i];
    INFO(info.id() << " '" << info.name << "' " << vgpu::to_string(info.type));
    CHECK(info.backend == vgpu::BackendKind::vulkan);
    CHECK(info.id() == "vulkan:" + std::to_string(i));
    if (is_lavapipe(info)) CHECK(info.type == vgpu::DeviceType::software);
    CHECK(info.type != vgpu::DeviceType::cpu);  // a Vulkan device is never the CPU fallback's kind
    CHECK(!info.name.empty());
    CHECK(!info.vendor.empty());
    CHECK(!info.driver_version.empty());
    CHECK_THAT(info.api_version, Catch::Matchers::StartsWith("Vulkan 1."));
    CHECK(info.memory_bytes > 0);

    const vgpu::DeviceLimits& l = info.limits;
    for (int k = 0; k < 3; ++k) {
      CHECK(l.max_workgroup_size[k] > 0);
      CHECK(l.max_workgroup_count[k] > 0);
    }
    CHECK(l.max_workgroup_invocations >= 128);  // Vulkan's required minimum
    CHECK(l.max_workgroup_count[0] >= 65535);
    CHECK(l.max_shared_memory_bytes >= 16384);
    CHECK(l.max_buffer_bytes >= (1u << 27));    // maxStorageBufferRange minimum
    CHECK(l.max_bindings >= 4);

    CHECK(info.fingerprint.text == d2[i].fingerprint.text);
    CHECK(info.fingerprint.hash == d2[i].fingerprint.hash);
    CHECK(info.fingerprint.hash == vgpu::cache::hash64(info.fingerprint.text));
    CHECK(info.fingerprint.hex().size() == 16);
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("backend=vulkan"));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("pipeline_cache_uuid="));
  }
  // Two opened devices (one per runtime) give a kernel the same key: what L2 sharing relies on.
  vgpu::Device a = r1.open("vulkan:0"), b = r2.open("vulkan:0");
  CHECK(a != b);
  CHECK(a.info().fingerprint.hash == b.info().fingerprint.hash);
  const vgpu::Kernel ka = a.compile(make_source(kScaleAddGlsl), scale_add_options());
  const vgpu::Kernel kb = b.compile(make_source(kScaleAddGlsl), scale_add_options());
  CHECK(ka.key_hex() == kb.key_hex());
  CHECK(ka.key_hex() == scale_add_key(a.info()).hex());
}

}  // namespace vgpu_test

// Lists and help run as usual; anything else needs a Vulkan device, or every selected test
// is reported as skipped (exit 77, ctest's SKIP_RETURN_CODE) with the reason.
int main(int argc, char* argv[]) {
  bool listing = false;
  std::string selected;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-t" || arg == "-h" || arg == "-?" || arg == "--help")
      listing = true;
    else if (arg == "-w" || arg == "-r" || arg == "-o" || arg == "-d" || arg == "-x" || arg == "-c" || arg == "-n" ||
             arg == "--warn" || arg == "--reporter" || arg == "--out" || arg == "--order" || arg == "--rng-seed")
      ++i;  // the option's value is not a test name
    else if (!arg.starts_with("-") && selected.empty())
      selected = arg;
  }
  if (!listing) {
    // Run by hand (not by ctest), the tests that plant entries in the process's L2 store must
    // not touch the user's real cache: default it to the build tree, before anything reads it.
    ::setenv("VGPU_CACHE_DIR", VGPU_TEST_TMP_ROOT "/default-cache", 0);
    const std::string why = vgpu_test::why_no_vulkan();
    if (!why.empty()) {
      std::printf("SKIPPED vulkan tests (%s): no Vulkan device: %s\n", selected.empty() ? "all" : selected.c_str(),
                  why.c_str());
      return 77;
    }
    const vgpu::DeviceInfo& info = vgpu_test::vulkan_device().info();
    std::printf("vulkan tests on %s (%s, %s)\n", info.id().c_str(), info.name.c_str(),
                std::string(vgpu::to_string(info.type)).c_str());
    std::fflush(stdout);
  }
  return vgpu_test::run_catch_session(argc, argv);
}
