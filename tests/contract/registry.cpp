// SPDX-License-Identifier: Apache-2.0
// tests/contract/registry.cpp — registering each case once per backend, running it (a skip with
// the reason where the backend has no device here), and the helpers every case shares.
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

#include "support/skip_case.hpp"
#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {
namespace {

std::atomic<int> g_run{0}, g_skipped{0};

/// Runs one case on one backend, or reports it skipped when the backend has no device here.
class CaseInvoker final : public Catch::ITestInvoker {
 public:
  CaseInvoker(void (*fn)(const Backend&), const Backend* backend) : fn_(fn), backend_(backend) {}
  /// Counts the case, then runs it, or skips it with the reason there is no device.
  void invoke() const override {
    ++g_run;
    if (const std::string& why = why_unavailable(*backend_); !why.empty())
      return skip("no " + backend_->name + " device: " + why);
    fn_(*backend_);
  }

 private:
  void (*fn_)(const Backend&);
  const Backend* backend_;
};

/// What the run keeps per backend: one runtime (only that backend allowed), and whether it
/// can open a device.
struct Shared {
  std::mutex mutex;
  std::unique_ptr<vgpu::Runtime> runtime;
  std::optional<std::string> why_unavailable;
  bool announced = false;
};

Shared& shared(const Backend& backend) {
  static std::array<Shared, 4> all;  // one per backend of vgpu's own (the suite's themes run on those)
  return all.at(backend.kind.id());
}

vgpu::Runtime& runtime_locked(const Backend& backend, Shared& s) {
  if (!s.runtime) s.runtime = std::make_unique<vgpu::Runtime>(vgpu::test::only(backend.kind));
  return *s.runtime;
}

}  // namespace

Registrar::Registrar(void (*fn)(const Backend&), const char* name, const char* tags, bool is_contract,
                     const std::function<bool(const Backend&)>& applies, const char* file, std::size_t line) {
  for (const Backend& b : backends()) {
    if (!applies(b)) continue;
    const std::string test = b.name + "." + name;
    const std::string all_tags = std::string(tags) + "[" + b.name + "]" + (is_contract ? "[contract]" : "");
    Catch::AutoReg(vgpu_test::invoker_ptr(new CaseInvoker(fn, &b)), Catch::SourceLineInfo(file, line), "",
                   Catch::NameAndTags(test, all_tags));
  }
}

std::function<bool(const Backend&)> only(vgpu::BackendKind kind) {
  return [kind](const Backend& b) { return b.kind == kind; };
}

const std::string& why_unavailable(const Backend& backend) {
  Shared& s = shared(backend);
  std::lock_guard lock(s.mutex);
  if (!s.why_unavailable) s.why_unavailable = vgpu::test::why_unavailable(runtime_locked(backend, s), backend.kind);
  return *s.why_unavailable;
}

vgpu::Device open_device(const Backend& backend) {
  Shared& s = shared(backend);
  std::lock_guard lock(s.mutex);
  vgpu::Device device = runtime_locked(backend, s).open(backend.name + ":0");
  if (!s.announced) {
    s.announced = true;
    const vgpu::DeviceInfo& info = device.info();
    std::printf("%s tests on %s (%s, %s, %s)\n", backend.name.c_str(), info.id().c_str(), info.name.c_str(),
                std::string(vgpu::to_string(info.type)).c_str(), info.driver_version.c_str());
    std::fflush(stdout);
  }
  return device;
}

void skip(const std::string& why) {
  ++g_skipped;
  vgpu_test::skip_case(why);
}

std::pair<int, int> cases_run_and_skipped() { return {g_run.load(), g_skipped.load()}; }

std::string why_no_l2_round_trip(const Backend& backend, const vgpu::Device& device) {
  if (!vgpu::cache::DiskStore::global().enabled())
    return "the L2 store is disabled here (VGPU_CACHE_DISABLE or an unusable VGPU_CACHE_DIR)";
  return backend.why_no_l2 ? backend.why_no_l2(device.info()) : std::string();
}

vgpu::KernelSource fresh_user_kernel(const Backend& backend) {
  const std::string run = "run " + std::to_string(::getpid()) + "-" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string& text = scale_add_text(backend.kind);
  // A comment in front of a GPU text; the CPU callable's version otherwise.
  return scale_add_source(backend.kind, backend.compiles_source ? "// " + run + "\n" + text : run + " " + text);
}

std::pair<vgpu::Kernel, vgpu::CounterSnapshot> counted_compile(vgpu::Device& device, const vgpu::KernelSource& source,
                                                               const vgpu::CompileOptions& options) {
  const vgpu::CounterSnapshot before = device.counters();
  vgpu::Kernel kernel = device.compile(source, options);
  return {std::move(kernel), device.counters() - before};
}

void check_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n, std::uint32_t wg) {
  INFO("n = " << n << ", workgroup " << wg);
  const ScaleAddResult r = run_scale_add(device, kernel, n, wg);
  INFO(r.values.describe());
  CHECK(r.values.ok());
  CHECK(r.guard_changed == 0);
}

vgpu::test::ChildRun run_child(const Backend& backend, const std::filesystem::path& cache_dir, bool disable) {
  vgpu::test::ChildOptions options;
  options.disable_l2 = disable;
  if (backend.child_mesa_cache)
    options.mesa_cache = cache_dir.parent_path() / (cache_dir.filename().string() + ".mesa");
  return vgpu::test::run_scale_add_child(backend.kind, cache_dir, options);
}

std::optional<Bytes> entry_after_child(const Backend& backend, const std::filesystem::path& dir,
                                       vgpu::cache::EntryKind kind, const vgpu::cache::KernelKey& key) {
  const vgpu::test::ChildRun first = run_child(backend, dir);
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());
  return DiskStore(options_for(dir)).load(kind, key, open_device(backend).info().fingerprint);
}

}  // namespace vgpu_test::contract
