// tests/opengl_test.cpp — the OpenGL backend end to end (llvmpipe in CI, so sizes stay
// small): what the device reports, user GLSL kernels and their compile errors, the L2 program
// binaries across processes (vgpu-test-backend-child) including damaged and stale entries and
// drivers without binary formats, several user threads on one GL device (whose context lives
// on one worker thread), steady state of persistent kernels, and batch resubmission.
//
// Every test needs an OpenGL device. Without one, main() prints the reason and exits 77,
// which ctest reports as a skip (SKIP_RETURN_CODE), never as a pass. A test case that cannot
// run here (no program binary formats) says so and, when it is all that was selected, also
// makes the run exit 77.
//
// The ctest entries run with a private VGPU_CACHE_DIR per test case and MESA_SHADER_CACHE_DIR
// in the build tree (tests/CMakeLists.txt). Tests that need a fresh or damaged store use the
// child program with their own temporary directories.
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
#include <map>
#include <mutex>
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
// Devices and skips


/// The runtime shared by tests that need no fresh device (main() probes it first).
vgpu::Runtime& shared_runtime() {
  static vgpu::Runtime runtime(only(vgpu::BackendKind::opengl));
  return runtime;
}

vgpu::Device gl_device() { return shared_runtime().open("opengl:0"); }

/// Returns "" when an OpenGL device can be opened here, else why not.
std::string why_no_opengl() { return why_unavailable(shared_runtime(), vgpu::BackendKind::opengl); }

bool has_feature(const vgpu::DeviceInfo& info, std::string_view f) {
  return std::find(info.features.begin(), info.features.end(), f) != info.features.end();
}

std::atomic<int> g_cases{0}, g_skipped{0};

/// Counts a test case that ran (main() compares it with the skipped ones).
void ran_case() { ++g_cases; }

/// Reports a test case that cannot run here, with why.
void skip_case(const std::string& why) {
  ++g_skipped;
  std::printf("SKIPPED %s: %s\n", Catch::getResultCapture().getCurrentTestName().c_str(), why.c_str());
  std::fflush(stdout);
  WARN("skipped: " << why);
}

// ---------------------------------------------------------------------------------------------
// The user kernel: out[i] = a[i] * p.scale + b[i], from support/scale_add_kernel.hpp, which the
// child program builds too (the cross-process tests compute the child's keys here).

/// The scale-add kernel for OpenGL with glsl as its body (tests vary the body).
vgpu::KernelSource make_source(const std::string& glsl) { return scale_add_source(vgpu::BackendKind::opengl, glsl); }

/// Runs the scale-add kernel (a 64-wide workgroup) on n random elements and checks the result
/// and 16 guard elements past n (which must keep their sentinel).
void check_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n) {
  INFO("n = " << n);
  const ScaleAddResult r = run_scale_add(device, kernel, n, 64);
  INFO(r.values.describe());
  CHECK(r.values.ok());
  CHECK(r.guard_changed == 0);
}

// ---------------------------------------------------------------------------------------------
// Files, directories and the child process

/// The child program (vgpu-test-backend-child): VGPU_TEST_OPENGL_CHILD when set, else next to
/// this test (binaries moved to another machine by tools/gpu-run.sh), else where the build put it.
std::string child_path() {
  const char* env = std::getenv("VGPU_TEST_OPENGL_CHILD");
  return env && *env ? env : vgpu::test::helper_path(VGPU_BACKEND_CHILD);
}

/// Runs the child on kScaleAddGlsl with the L2 store in <tmp>/cache and Mesa's shader cache
/// in <tmp>/mesa (turned off with no_mesa_cache: then Mesa offers no binary formats).
ChildRun run_child(const TempDir& tmp, bool no_mesa_cache = false) {
  return vgpu::test::run_backend_child(
      child_path(), "opengl", tmp.path / "kernel.glsl", kScaleAddGlsl, tmp.path / "cache", false, kChildN,
      "-u MESA_SHADER_CACHE_DISABLE MESA_SHADER_CACHE_DIR=" + quoted((tmp.path / "mesa").string()) +
          (no_mesa_cache ? " MESA_SHADER_CACHE_DISABLE=true" : ""));
}

/// Returns "" when this device can keep program binaries, else why not (the L2 cases skip).
std::string why_no_binaries(const vgpu::Device& device) {
  if (has_feature(device.info(), "program_binary")) return "";
  return "'" + device.info().name +
         "' offers no program binary formats (GL_NUM_PROGRAM_BINARY_FORMATS is 0; on Mesa, "
         "MESA_SHADER_CACHE_DISABLE=true does that), so OpenGL kernels skip L2";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. What the device reports

TEST_CASE("device info: type, limits with the reserved params binding, stable fingerprint", "[opengl][info]") {
  ran_case();
  vgpu::Runtime r1(only(vgpu::BackendKind::opengl)), r2(only(vgpu::BackendKind::opengl));
  const auto d1 = r1.devices(), d2 = r2.devices();
  REQUIRE(!d1.empty());
  REQUIRE(d1.size() == d2.size());
  for (std::size_t i = 0; i < d1.size(); ++i) {
    const vgpu::DeviceInfo& info = d1[i];
    INFO(info.id() << " '" << info.name << "' " << vgpu::to_string(info.type) << " " << info.driver_version);
    CHECK(info.backend == vgpu::BackendKind::opengl);
    CHECK(info.id() == "opengl:" + std::to_string(i));
    if (info.name.find("llvmpipe") != std::string::npos) CHECK(info.type == vgpu::DeviceType::software);
    CHECK(info.type != vgpu::DeviceType::cpu);
    CHECK(!info.vendor.empty());
    CHECK(!info.driver_version.empty());  // GL_VERSION
    CHECK_THAT(info.api_version, Catch::Matchers::StartsWith("OpenGL 4."));
    const vgpu::DeviceLimits& l = info.limits;
    for (int k = 0; k < 3; ++k) CHECK(l.max_workgroup_count[k] >= 65535);  // GL 4.3 minimums
    CHECK(l.max_workgroup_size[0] >= 1024);
    CHECK(l.max_workgroup_invocations >= 1024);
    CHECK(l.max_shared_memory_bytes >= 32768);
    CHECK(l.max_buffer_bytes >= (1u << 24));
    CHECK(l.max_bindings >= 7);  // 8 SSBO bindings at least, the last one for params
    CHECK(l.max_bindings <= 32);
    CHECK(has_feature(info, "egl_device") != has_feature(info, "egl_surfaceless"));
    CHECK(info.fingerprint.text == d2[i].fingerprint.text);
    CHECK(info.fingerprint.hash == vgpu::cache::hash64(info.fingerprint.text));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("backend=opengl"));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("renderer=" + info.name));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("binary_formats="));
    CHECK_THAT(info.fingerprint.text, Catch::Matchers::Contains("vgpu_cache_format="));
  }
  // Two opened devices (one per runtime, each with its own context and thread) agree on keys.
  vgpu::Device a = r1.open("opengl:0"), b = r2.open("opengl:0");
  CHECK(a != b);
  const vgpu::Kernel ka = a.compile(make_source(kScaleAddGlsl), scale_add_options());
  const vgpu::Kernel kb = b.compile(make_source(kScaleAddGlsl), scale_add_options());
  CHECK(ka.key_hex() == kb.key_hex());
  CHECK(ka.key_hex() == scale_add_key(a.info()).hex());
  check_scale_add(a, ka, 100);
  check_scale_add(b, kb, 100);
}

// ---------------------------------------------------------------------------------------------
// 2. User GLSL kernels

TEST_CASE("user GLSL kernel: right at awkward sizes, compiled once, then an L1 hit", "[opengl][user]") {
  ran_case();
  vgpu::Device device = gl_device();
  // A comment unique to this process gives a key no earlier run stored in L2.
  const std::string nonce = "// run " + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
  const vgpu::KernelSource source = make_source(nonce + kScaleAddGlsl);
  const vgpu::CounterSnapshot before = device.counters();
  const vgpu::Kernel kernel = device.compile(source, scale_add_options());
  vgpu::CounterSnapshot d = device.counters() - before;
  INFO("first compile: " << d.to_string());
  CHECK(d.source_compiles == 1);
  CHECK(d.compiles == 1);
  CHECK(d.l2_hits == 0);
  CHECK(d.l3_hits == 0);  // L3 is SPIR-V, for Vulkan only
  if (DiskStore::global().enabled() && has_feature(device.info(), "program_binary")) {
    CHECK(d.l2_misses == 1);
    CHECK(d.l2_writes == 1);
  }
  const vgpu::CounterSnapshot before2 = device.counters();
  const vgpu::Kernel again = device.compile(source, scale_add_options());
  d = device.counters() - before2;
  CHECK(d.source_compiles + d.compiles == 0);
  CHECK(d.l1_hits == 1);
  CHECK(again.key_hex() == kernel.key_hex());
  for (std::uint32_t n : {1u, 255u, 1000u, 65537u}) check_scale_add(device, kernel, n);
}

TEST_CASE("bad GLSL fails with compile_error carrying the driver's log, and the device keeps working",
          "[opengl][user][errors]") {
  ran_case();
  vgpu::Device device = gl_device();
  vgpu::KernelSource undeclared = make_source(
      "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
      "layout(std430, binding = 0) buffer Buf { float v[]; };\n"
      "void main() {\n"
      "  v[0] = p.scale * no_such_variable;\n"
      "}\n");
  undeclared.name = "test.gl_undeclared";
  undeclared.bindings.resize(1);
  vgpu::KernelSource syntax = make_source("void main() { int x = ; }\n");
  syntax.name = "test.gl_syntax";
  syntax.bindings.clear();
  syntax.params_size = 0;

  const vgpu::CounterSnapshot before = device.counters();
  REQUIRE_VGPU_ERROR(compile_error, "GLSL kernel 'test.gl_undeclared' failed to compile:\n", device.compile(undeclared));
  REQUIRE_VGPU_ERROR(compile_error, "no_such_variable", device.compile(undeclared));
  REQUIRE_VGPU_ERROR(compile_error, "GLSL kernel 'test.gl_syntax' failed to compile:\n", device.compile(syntax));
  const auto err = catch_error([&] { device.compile(syntax); });
  REQUIRE(err.has_value());
  // The log numbers the body's lines ("#line 1" after the prelude): Mesa "0:1(..)", NVIDIA "0(1)".
  CHECK_THAT(err->problem(), Catch::Matchers::Contains("0:1(") || Catch::Matchers::Contains("0(1)"));
  CHECK(err->what() == err->problem() + " Fix: " + err->fix());
  const vgpu::CounterSnapshot d = device.counters() - before;
  INFO(d.to_string());
  CHECK(d.source_compiles == 0);  // counts only compiles that produced a shader
  CHECK(d.compiles == 0);
  CHECK(d.l2_writes == 0);

  const vgpu::Kernel good = device.compile(make_source(kScaleAddGlsl), scale_add_options());
  check_scale_add(device, good, 1000);
}

TEST_CASE("specialization constants in GLSL are refused with compile_error before the driver sees them",
          "[opengl][user][errors][spec]") {
  // layout(constant_id = N) belongs to SPIR-V targets. Mesa refuses it; NVIDIA's GLSL compiler
  // (driver 580) died with SIGSEGV inside glCompileShader on any shader declaring one, taking the
  // process down. vgpu refuses them itself, on every driver. K is 1, so an accepted kernel would
  // compute the plain scale-add.
  ran_case();
  vgpu::Device device = gl_device();
  const std::string head = "VGPU_PARAMS { uint n; float scale; uint pad0; uint pad1; } p;\n"
                           "layout(std430, binding = 0) readonly buffer BufA { float a[]; };\n"
                           "layout(std430, binding = 1) readonly buffer BufB { float b[]; };\n"
                           "layout(std430, binding = 2) writeonly buffer BufOut { float result[]; };\n";
  const std::string body = "void main() {\n"
                           "  const uint i = VGPU_LINEAR_GROUP * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n"
                           "  if (i < p.n) result[i] = a[i] * p.scale * float(K) + b[i];\n"
                           "}\n";
  const std::vector<std::string> declarations = {
      "layout(constant_id = 0) const uint K = 1u;\n",
      "layout(constant_id = 1) const int K = 1;\n",
      "layout(constant_id = 2) const bool B = true;\n#define K (B ? 1.0 : 0.0)\n",
      "layout(constant_id = 7) const float K = 1.0;\n",
      "layout(constant_id = 3) const uint S = 64u;\nshared float tile[S];\n#define K (tile.length() == 64 ? 1u : 0u)\n",
      "layout(constant_id = 0) const uint K = 1u;\nlayout(constant_id = 1) const uint L = 2u;\n"
      "layout(constant_id = 2) const uint M = 3u;\nlayout(constant_id = 9) const float F = 0.5;\n",
      "#define SPEC(n) layout(constant_id = n)\nSPEC(4) const uint K = 1u;\n",
      "layout(local_size_x_id = 0) in;\nconst uint K = 1u;\n",
  };
  for (std::size_t v = 0; v < declarations.size(); ++v) {
    INFO("variant " << v << ":\n" << declarations[v]);
    vgpu::KernelSource source = make_source(head + declarations[v] + body);
    source.name = "test.gl_spec_constant_" + std::to_string(v);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const auto err = catch_error([&] { (void)device.compile(source, scale_add_options()); });
      REQUIRE(err.has_value());
      INFO(err->what());
      CHECK(err->category() == vgpu::ErrorCategory::compile_error);
      CHECK_THAT(err->problem(), Catch::Matchers::Contains("specialization constants exist only for SPIR-V"));
      CHECK_THAT(err->problem(), Catch::Matchers::Contains("line "));
      CHECK_THAT(err->fix(), Catch::Matchers::Contains("CompileOptions::defines"));
    }
  }
  // A define's value is checked too.
  vgpu::CompileOptions pasted = scale_add_options();
  pasted.defines["SPEC"] = "layout(constant_id = 5)";
  REQUIRE_VGPU_ERROR(compile_error, "define SPEC", device.compile(make_source(head + "SPEC const uint K = 1u;\n" + body), pasted));
  // The words in comments are not constructs: this kernel compiles and runs right.
  const vgpu::KernelSource commented = make_source(
      "// Vulkan would take layout(constant_id = 0) here.\n/* local_size_x_id\n too */\nconst uint K = 1u;\n" + head + body);
  check_scale_add(device, device.compile(commented, scale_add_options()), 1000);
  // The device keeps working after all of that.
  check_scale_add(device, device.compile(make_source(kScaleAddGlsl), scale_add_options()), 1000);
}

// ---------------------------------------------------------------------------------------------
// 3. L2 program binaries across processes

TEST_CASE("L2 across processes: the second process links the first one's program binary", "[opengl][l2][processes]") {
  ran_case();
  vgpu::Device device = gl_device();
  if (const std::string why = why_no_binaries(device); !why.empty()) return skip_case(why);
  TempDir tmp("gl-");
  const ChildRun first = run_child(tmp);
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());
  REQUIRE(first.count("program_binary") == 1);
  CHECK(first.count("l2_misses") == 1);
  vgpu::test::check_compiled_and_stored(first);
  vgpu::test::check_single_entry(tmp.path / "cache", EntryKind::gl_program_binary, scale_add_key(device.info()),
                                 device.info().fingerprint);
  vgpu::test::check_loaded_from_l2(run_child(tmp));
}

TEST_CASE("L2 without binary formats (MESA_SHADER_CACHE_DISABLE=true): no store, no load, right results",
          "[opengl][l2][processes]") {
  ran_case();
  if (gl_device().info().vendor.find("Mesa") == std::string::npos)
    return skip_case("MESA_SHADER_CACHE_DISABLE only affects Mesa drivers");
  TempDir tmp("gl-");
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(tmp, true);
    INFO("run " << run << ":\n" << r.output);
    REQUIRE(r.ok());
    CHECK(r.count("program_binary") == 0);
    CHECK(r.count("source_compiles") == 1);
    CHECK(r.count("l2_hits") + r.count("l2_misses") + r.count("l2_writes") + r.count("l2_rejected") == 0);
    CHECK(r.count("store_hits") + r.count("store_misses") + r.count("store_writes") == 0);
  }
  CHECK(entries(tmp.path / "cache", EntryKind::gl_program_binary, true).empty());
}

TEST_CASE("L2 damage: a stale or garbage program binary is refused, counted, and recompiled",
          "[opengl][l2][corrupt]") {
  ran_case();
  vgpu::Device device = gl_device();
  if (const std::string why = why_no_binaries(device); !why.empty()) return skip_case(why);
  TempDir tmp("gl-");
  const ChildRun first = run_child(tmp);
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());
  const fs::path dir = tmp.path / "cache";
  Bytes good;
  {
    DiskStore store(options_for(dir));
    auto payload = store.load(EntryKind::gl_program_binary, scale_add_key(device.info()), device.info().fingerprint);
    REQUIRE(payload.has_value());
    REQUIRE(payload->size() > 4);
    good = *payload;
  }
  // (1) the driver's own format, then noise: a well-formed entry the driver must refuse
  // (GL_LINK_STATUS false after glProgramBinary). (2) A format the driver does not offer.
  Bytes noise = good;
  std::uint32_t state = 2463534242u;
  for (std::size_t i = 4; i < noise.size(); ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    noise[i] = static_cast<std::uint8_t>(state);
  }
  Bytes foreign = good;
  const std::uint32_t bogus = 0x7eadbeef;
  std::memcpy(foreign.data(), &bogus, 4);
  for (const auto& [what, payload] : {std::pair<const char*, Bytes>{"garbage binary", noise}, {"foreign format", foreign}}) {
    INFO(what);
    {
      DiskStore store(options_for(dir));
      REQUIRE(store.store(EntryKind::gl_program_binary, scale_add_key(device.info()), device.info().fingerprint,
                          payload, 1));
    }
    const ChildRun run = run_child(tmp);
    INFO("run on the damaged entry:\n" << run.output);
    REQUIRE(run.ok());  // a bad cache costs a recompile, never a wrong result
    CHECK(run.count("source_compiles") == 1);
    CHECK(run.count("l2_hits") == 0);
    CHECK(run.count("l2_rejected") == 1);
    CHECK_THAT(run.text("store_rejected"), Catch::Matchers::Contains("driver:1"));
    CHECK(run.count("l2_writes") >= 1);  // and a good binary replaces it

    const ChildRun again = run_child(tmp);
    INFO("run after the repair:\n" << again.output);
    REQUIRE(again.ok());
    CHECK(again.count("source_compiles") == 0);
    CHECK(again.count("l2_hits") >= 1);
    CHECK(again.count("l2_rejected") == 0);
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Threads: one context, one worker, many callers

TEST_CASE("threads: four user threads × 50 calls on one GL device get their own right results", "[opengl][threads]") {
  ran_case();
  vgpu::Device device = gl_device();
  constexpr std::uint32_t n = 4097, kThreads = 4, kCalls = 50;
  const vgpu::CounterSnapshot before = device.counters();
  std::atomic<std::uint64_t> wrong{0}, calls{0};
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        // Odd threads: a PersistentKernel (recorded batch); even ones: raw dispatches.
        const auto plan = vgpu::ops::add(device.info(), n);
        std::vector<float> a(n), b(n), out(n);
        auto fill = [&](std::uint32_t c) {
          // Small integers and halves: every sum is exact, so any mix-up between threads shows.
          for (std::uint32_t i = 0; i < n; ++i) {
            a[i] = static_cast<float>(t * 100000 + c * 1000 + i % 997);
            b[i] = static_cast<float>(i % 13) * 0.5f;
          }
          std::fill(out.begin(), out.end(), kNaN);
        };
        if (t % 2) {
          vgpu::PersistentKernel kernel(device, plan);
          for (std::uint32_t c = 0; c < kCalls; ++c) {
            fill(c);
            kernel({vgpu::TensorArg(static_cast<const float*>(a.data()), {n}),
                    vgpu::TensorArg(static_cast<const float*>(b.data()), {n}), vgpu::TensorArg(out.data(), {n})});
            for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];
            ++calls;
          }
        } else {
          const vgpu::Kernel k = device.compile(plan.source, plan.options);
          vgpu::Buffer ba = device.create_buffer(n * 4), bb = device.create_buffer(n * 4), bo = device.create_buffer(n * 4);
          const vgpu::BindingSet set = device.bind(k, {{0, ba}, {1, bb}, {2, bo}});
          for (std::uint32_t c = 0; c < kCalls; ++c) {
            fill(c);
            device.write(ba, a.data(), n * 4);
            device.write(bb, b.data(), n * 4);
            device.dispatch(k, set, plan.steps[0].params, plan.steps[0].groups);
            device.read(bo, out.data(), n * 4);
            for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];
            ++calls;
          }
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
  CHECK(d.allocations == kThreads * 3);
  CHECK(d.binds == kThreads);
  CHECK(d.dispatches == kThreads * kCalls);
}

// ---------------------------------------------------------------------------------------------
// 5. Steady state and batches

TEST_CASE("steady state on OpenGL: 200 persistent calls with new data compile, allocate and bind nothing",
          "[opengl][steady]") {
  ran_case();
  vgpu::Device device = gl_device();
  const vgpu::DeviceInfo& info = device.info();
  struct Op {
    vgpu::KernelPlan plan;
    HostTensors args;
    std::size_t poked, output;
    std::function<Reference(const HostTensors&)> reference;
  };
  std::vector<Op> ops;
  ops.push_back({vgpu::ops::add(info, 1000), {random_floats(1000, 1), random_floats(1000, 2), std::vector<float>(1000)}, 0, 2,
                 [](const HostTensors& a) { return binary_reference(a[0], a[1], false); }});
  ops.push_back({vgpu::ops::matmul(info, 33, 17, 45),
                 {random_floats(33 * 17, 3), random_floats(17 * 45, 4), std::vector<float>(33 * 45)}, 1, 2,
                 [](const HostTensors& a) { return matmul_reference(a[0], a[1], 33, 17, 45); }});
  ops.push_back({vgpu::ops::reduce_sum(info, 10000), {random_floats(10000, 5), {0.0f}}, 0, 1,
                 [](const HostTensors& a) { return sum_reference(a[0]); }});
  for (Op& op : ops) {
    INFO(op.plan.source.name);
    vgpu::PersistentKernel kernel(device, op.plan);
    call(kernel, op.args);
    const vgpu::CounterSnapshot before = device.counters();
    constexpr std::uint64_t kCalls = 200;
    for (std::uint64_t i = 0; i < kCalls; ++i) {
      auto& v = op.args[op.poked];
      v[(i * 7919) % v.size()] = static_cast<float>(i % 13) * 0.25f - 1.5f;
      call(kernel, op.args);
    }
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(kCalls << " calls: " << d.to_string());
    CHECK(d.compiles + d.source_compiles == 0);
    CHECK(d.l1_hits + d.l1_misses + d.l2_hits + d.l2_misses == 0);
    CHECK(d.allocations == 0);
    CHECK(d.binds == 0);
    CHECK(d.submits == kCalls);
    CHECK(d.dispatches == kCalls * op.plan.steps.size());
    const Comparison c = compare(op.args[op.output], op.reference(op.args));
    INFO("last call: " << c.describe());
    CHECK(c.ok());
  }
}

TEST_CASE("batch: dependent dispatches with different params, recorded once, resubmitted", "[opengl][batch]") {
  ran_case();
  vgpu::Device device = gl_device();
  constexpr std::uint32_t n = 1000;
  const vgpu::Kernel k = device.compile(make_source(kScaleAddGlsl), scale_add_options());
  vgpu::Buffer x = device.create_buffer(n * 4), y = device.create_buffer(n * 4), z = device.create_buffer(n * 4);
  // y = 2x + x = 3x; z = -0.5y + x = -0.5x; y = 4z + y = x — each step reads the one before,
  // and each has its own params (one params block per dispatch of the same kernel).
  vgpu::Batch batch = device.create_batch();
  const auto groups = spread((n + 63) / 64);
  batch.dispatch(k, device.bind(k, {{0, x}, {1, x}, {2, y}}), vgpu::ParamsBlock::of(ScaleAddParams{n, 2.0f, 0, 0}), groups);
  batch.dispatch(k, device.bind(k, {{0, y}, {1, x}, {2, z}}), vgpu::ParamsBlock::of(ScaleAddParams{n, -0.5f, 0, 0}), groups);
  vgpu::Buffer y2 = device.create_buffer(n * 4);
  batch.dispatch(k, device.bind(k, {{0, z}, {1, y}, {2, y2}}), vgpu::ParamsBlock::of(ScaleAddParams{n, 4.0f, 0, 0}), groups);
  for (int round = 0; round < 3; ++round) {
    INFO("submit " << round);
    std::vector<float> xs(n);
    for (std::uint32_t i = 0; i < n; ++i) xs[i] = static_cast<float>((i * (round + 3)) % 101) - 50.0f;  // exact
    device.write(x, xs.data(), n * 4);
    const vgpu::CounterSnapshot before = device.counters();
    device.submit(batch);
    device.synchronize();
    std::vector<float> gy(n), gz(n), gy2(n);
    device.read(y, gy.data(), n * 4);
    device.read(z, gz.data(), n * 4);
    device.read(y2, gy2.data(), n * 4);
    const vgpu::CounterSnapshot d = device.counters() - before;
    CHECK(d.submits == 1);
    CHECK(d.dispatches == 3);
    CHECK(d.compiles + d.binds + d.allocations == 0);
    std::size_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      bad += gy[i] != 3 * xs[i] || gz[i] != -0.5f * xs[i] || gy2[i] != xs[i];
    CHECK(bad == 0);
  }
}

}  // namespace vgpu_test

// Lists and help run as usual; anything else needs an OpenGL device, or every selected test is
// reported as skipped (exit 77, ctest's SKIP_RETURN_CODE) with the reason.
int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-t" || arg == "-h" || arg == "-?" || arg == "--help")
      listing = true;
  }
  if (listing) return vgpu_test::run_catch_session(argc, argv);
  // Run by hand, keep the tests away from the user's real caches.
  ::setenv("VGPU_CACHE_DIR", VGPU_TEST_TMP_ROOT "/default-cache", 0);
  ::setenv("MESA_SHADER_CACHE_DIR", VGPU_TEST_TMP_ROOT "/mesa", 0);
  const std::string why = vgpu_test::why_no_opengl();
  if (!why.empty()) {
    std::printf("SKIPPED opengl tests: no OpenGL device: %s\n", why.c_str());
    return 77;
  }
  const vgpu::DeviceInfo& info = vgpu_test::gl_device().info();
  std::printf("opengl tests on %s (%s, %s, %s)\n", info.id().c_str(), info.name.c_str(),
              std::string(vgpu::to_string(info.type)).c_str(), info.driver_version.c_str());
  std::fflush(stdout);
  const int result = vgpu_test::run_catch_session(argc, argv);
  // Every selected case skipped (as when ctest runs one that cannot run here): a skip, not a pass.
  if (result == 0 && vgpu_test::g_cases > 0 && vgpu_test::g_skipped == vgpu_test::g_cases) return 77;
  return result;
}
