// SPDX-License-Identifier: Apache-2.0
// tests/contract/contract.hpp — the backend contract: what every backend's devices must do, written
// once and run on each backend (cpu, vulkan, opengl, cuda) through a small table of per-backend
// traits (the user kernel in its dialect, whether it keeps compiled kernels in L2 and in which
// entry kind, what a bad source and a damaged entry look like, what its devices report).
//
// A case is written as
//   CONTRACT_CASE("name", "[tags]", applies) { ... uses `backend` ... }
// and becomes one Catch test case "<backend>.name" (tags plus [<backend>] and [contract]) for
// every backend applies(backend) accepts: a theme that cannot apply to a backend (the CPU
// compiles no source and keeps no L2) is simply not registered for it. A backend's own tests
// (tests/<backend>_test.cpp) use BACKEND_CASE(kind, "name", "[tags]") the same way.
// When a case cannot run here (no such device, the L2 store is off, the driver keeps no
// binaries), it prints "SKIPPED <test>: <why>", WARNs the same, and main() makes the run exit
// 77 when every case it ran was skipped: ctest reports a skip with the reason, never a pass.
//
// The themes, one file each: user_kernel_test.cpp (awkward sizes, compiled once, then L1),
// compile_errors_test.cpp (the compiler's log; nothing cached), l2_round_trip_test.cpp (a fresh
// Runtime and a second process load L2; VGPU_CACHE_DISABLE), l2_damage_test.cpp (checksum,
// invalid and driver-refused entries), steady_test.cpp, batch_test.cpp, threads_test.cpp,
// device_info_test.cpp. registry.cpp runs the cases; backends.cpp holds the traits.
//
// Thread-safety: the registry is built during static initialisation; the rest is called from the
// test thread (cases that start threads pass them devices, not these helpers).
#pragma once

#include "support/catch.hpp"
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/backend_child.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu_test::contract {

/// A payload a test plants as a backend's L2 entry, and what it is.
struct Payload {
  std::string what;
  Bytes bytes;
};

/// A kernel the backend must refuse with compile_error, and what the message must say: each
/// entry of fragments is a list of alternatives, one of which the message contains.
struct BadSource {
  std::string what;
  vgpu::KernelSource source;
  std::vector<std::vector<std::string>> fragments;
  bool text_compiles = false;  ///< the front end accepts the text (it fails later: source_compiles and
                               ///< l2_writes may then move)
};

/// What one backend brings to the contract. Plain data and small functions of it, so that the
/// cases never ask which backend they run on.
struct Backend {
  vgpu::BackendKind kind = vgpu::BackendKind::cpu;
  std::string name;  ///< as device ids and test names spell it ("vulkan")

  // --- Compiling
  bool compiles_source = false;                         ///< has a run-time front end (source_compiles counts it)
  bool l1_keeps_user_kernels = true;                    ///< a user kernel compiled again is an L1 hit (a CPU callable's
                                                        ///< captures cannot be hashed, so it bypasses L1 by design)
  std::function<std::vector<BadSource>()> bad_sources;  ///< sources its compiler refuses (with compiles_source)

  // --- L2 (without l2 the backend keeps nothing on disk and the L2 themes do not apply)
  std::optional<vgpu::cache::EntryKind> l2;  ///< the entry kind of a compiled user kernel
  bool l2_extra_writes = false;         ///< a compile may write more than the kernel's entry (Vulkan's pipeline cache)
  Bytes l2_payload_prefix;              ///< how every kernel payload it stores begins (empty: no fixed start)
  bool child_mesa_cache = false;        ///< its L2 needs Mesa's shader cache, so the child gets one of its own
  bool child_reports_binaries = false;  ///< the child prints program_binary=0|1 (OpenGL)
  std::function<std::string(const vgpu::DeviceInfo&)> why_no_l2;          ///< "" or why this device keeps no L2
  std::function<std::vector<Payload>()> invalid_payloads;                 ///< what the store's payload check refuses
  std::function<std::vector<Payload>(const Bytes& good)> driver_refused;  ///< what passes that check but the
                                                                          ///< backend or driver refuses

  // --- What its devices report
  bool cpu_device = false;                   ///< its devices are DeviceType::cpu (else never)
  std::string api_prefix;                    ///< DeviceInfo::api_version starts with this
  bool reports_memory = false;               ///< memory_bytes > 0
  bool reports_compute_units = false;        ///< compute_units > 0
  vgpu::DeviceLimits min_limits;             ///< every limit is at least this
  std::uint32_t max_bindings = 0xffffffffu;  ///< and max_bindings at most this
  std::function<std::vector<std::string>(const vgpu::DeviceInfo&)> fingerprint_fields;  ///< in fingerprint.text
  std::vector<std::string> one_feature_of;  ///< exactly one of these is in DeviceInfo::features

  /// Returns whether this backend keeps compiled kernels in L2.
  bool has_l2() const { return l2.has_value(); }
};

/// Returns the traits of every backend the suite knows (cpu, vulkan, opengl, cuda; backends.cpp).
const std::vector<Backend>& backends();

/// Returns "" when backend's device 0 can be opened here, else why not.
const std::string& why_unavailable(const Backend& backend);

/// Returns backend:0 from a runtime kept for the whole run (the first call prints which device
/// the tests run on).
vgpu::Device open_device(const Backend& backend);

/// Reports the running test case as skipped, with why (printed and WARNed); the case returns.
void skip(const std::string& why);

/// Returns how many test cases started, and how many of those were skipped.
std::pair<int, int> cases_run_and_skipped();

/// Returns "" when device can round-trip a user kernel through L2 with the store on, else why not.
std::string why_no_l2_round_trip(const Backend& backend, const vgpu::Device& device);

/// Returns the scale-add user kernel for backend (support/scale_add_kernel.hpp) whose text (or
/// for the CPU, version) is made unique to this process, so no earlier run's L2 entry answers.
vgpu::KernelSource fresh_user_kernel(const Backend& backend);

/// Compiles source with options on device; returns the kernel and what the compile counted.
std::pair<vgpu::Kernel, vgpu::CounterSnapshot> counted_compile(vgpu::Device& device, const vgpu::KernelSource& source,
                                                               const vgpu::CompileOptions& options);

/// Runs the scale-add kernel (a wg-wide workgroup) on n elements and checks the results and the
/// 16 guard elements past n.
void check_scale_add(vgpu::Device& device, const vgpu::Kernel& kernel, std::uint32_t n, std::uint32_t wg);

/// Runs the child for backend on its scale-add kernel, L2 store in cache_dir (disabled when
/// asked), with the backend's child needs (OpenGL: Mesa's cache beside cache_dir).
vgpu::test::ChildRun run_child(const Backend& backend, const std::filesystem::path& cache_dir, bool disable = false);

/// Runs the child once on dir (it must succeed) and returns the entry of kind under key that it
/// left there for backend's device 0 (nothing when there is none).
std::optional<Bytes> entry_after_child(const Backend& backend, const std::filesystem::path& dir,
                                       vgpu::cache::EntryKind kind, const vgpu::cache::KernelKey& key);

/// Registers fn as the test case "<backend>.<name>" for each backend applies(backend) accepts.
struct Registrar {
  Registrar(void (*fn)(const Backend&), const char* name, const char* tags, bool is_contract,
            const std::function<bool(const Backend&)>& applies, const char* file, std::size_t line);
};

/// Returns a predicate true for the backend of kind only.
std::function<bool(const Backend&)> only(vgpu::BackendKind kind);

/// Predicates for CONTRACT_CASE: every backend; those with a run-time front end; those with L2.
inline bool every_backend(const Backend&) { return true; }
inline bool compiles_source(const Backend& b) { return b.compiles_source; }
inline bool keeps_l2(const Backend& b) { return b.has_l2(); }

}  // namespace vgpu_test::contract

#define VGPU_CONTRACT_CAT2(a, b) a##b
#define VGPU_CONTRACT_CAT(a, b) VGPU_CONTRACT_CAT2(a, b)
#define VGPU_CONTRACT_CASE_IMPL(fn, reg, name, tags, is_contract, ...)                                             \
  static void fn(const ::vgpu_test::contract::Backend& backend);                                                   \
  static const ::vgpu_test::contract::Registrar reg(fn, name, tags, is_contract, __VA_ARGS__, __FILE__, __LINE__); \
  static void fn([[maybe_unused]] const ::vgpu_test::contract::Backend& backend)

/// A contract case, registered for every backend the predicate (the last argument) accepts.
#define CONTRACT_CASE(name, tags, ...)                                                                             \
  VGPU_CONTRACT_CASE_IMPL(VGPU_CONTRACT_CAT(contract_case_, __LINE__), VGPU_CONTRACT_CAT(contract_reg_, __LINE__), \
                          name, tags, true, __VA_ARGS__)

/// A test of one backend's own behaviour (kind: cpu, vulkan, opengl or cuda).
#define BACKEND_CASE(kind, name, tags)                                                                                 \
  VGPU_CONTRACT_CASE_IMPL(VGPU_CONTRACT_CAT(backend_case_, __LINE__), VGPU_CONTRACT_CAT(backend_reg_, __LINE__), name, \
                          tags, false, ::vgpu_test::contract::only(::vgpu::BackendKind::kind))
