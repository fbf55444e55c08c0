// SPDX-License-Identifier: Apache-2.0
// tests/contract/l2_round_trip_test.cpp — a backend that keeps compiled kernels on disk (L2) loads
// them again instead of compiling: in a fresh Runtime of the same process, and in a second
// process (vgpu-test-backend-child) on the same cache directory, which finds exactly one valid
// entry under the key this process computes; with VGPU_CACHE_DISABLE=1 it compiles every time
// and writes nothing.
#include <filesystem>

#include "contract/contract.hpp"
#include "support/cache_fixtures.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {

CONTRACT_CASE("L2 round trip: a fresh Runtime loads the compiled kernel instead of compiling", "[l2]", keeps_l2) {
  if (const std::string why = why_no_l2_round_trip(backend, open_device(backend)); !why.empty()) return skip(why);
  const vgpu::KernelSource source = fresh_user_kernel(backend);
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};
  {
    vgpu::Runtime first(vgpu::test::only(backend.kind));
    vgpu::Device device = first.open(backend.name + ":0");
    const auto [k, d] = counted_compile(device, source, options);
    INFO("first runtime: " << d.to_string());
    CHECK(d.source_compiles == 1);
    CHECK(d.l2_writes >= 1);
  }
  vgpu::Runtime second(vgpu::test::only(backend.kind));
  vgpu::Device device = second.open(backend.name + ":0");
  const auto [k, d] = counted_compile(device, source, options);
  INFO("second runtime: " << d.to_string());
  CHECK(d.l2_hits >= 1);
  CHECK(d.source_compiles == 0);
  check_scale_add(device, k, 1000, 64);
}

CONTRACT_CASE("L2 across processes: the second process loads the first one's compiled kernel", "[l2][processes]",
              keeps_l2) {
  const vgpu::Device device = open_device(backend);
  if (backend.why_no_l2)
    if (const std::string why = backend.why_no_l2(device.info()); !why.empty()) return skip(why);
  TempDir tmp(backend.name + "-");
  const fs::path dir = tmp.path / "cache";
  const ChildRun first = run_child(backend, dir);
  {
    INFO("first run:\n" << first.output);
    REQUIRE(first.ok());
    if (backend.child_reports_binaries) REQUIRE(first.count("program_binary") == 1);
    CHECK(first.count("l2_misses") == 1);
  }
  vgpu::test::check_compiled_and_stored(first);
  vgpu::test::check_single_entry(dir, *backend.l2, scale_add_key(device.info()), device.info().fingerprint);
  vgpu::test::check_loaded_from_l2(run_child(backend, dir));
}

CONTRACT_CASE("L2 across processes: VGPU_CACHE_DISABLE=1 compiles every time and writes nothing", "[l2][processes]",
              keeps_l2) {
  TempDir tmp(backend.name + "-");
  const fs::path dir = tmp.path / "cache";
  for (int run = 0; run < 2; ++run) {
    const ChildRun r = run_child(backend, dir, true);
    INFO("run " << run << ":\n" << r.output);
    REQUIRE(r.ok());
    CHECK(r.count("source_compiles") == 1);
    CHECK(r.count("l2_hits") == 0);
    CHECK(r.count("l2_writes") == 0);
    CHECK(r.count("store_writes") == 0);
  }
  CHECK(vgpu::cache::DiskStore(vgpu::test::options_for(dir)).list(false).empty());
}

}  // namespace vgpu_test::contract
