// SPDX-License-Identifier: Apache-2.0
// tests/contract/compile_errors_test.cpp — a source the backend's compiler refuses is a
// compile_error whose message carries the compiler's log (the offending name, the line), it is
// not cached (asking again fails again, nothing is counted as compiled or written to L2), and
// the device keeps working.
#include "contract/contract.hpp"
#include "support/expect_error.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {

CONTRACT_CASE("bad source: compile_error carrying the compiler's log and line, and the device keeps working",
              "[user][errors]", compiles_source) {
  vgpu::Device device = open_device(backend);
  const std::vector<BadSource> bad_sources = backend.bad_sources();
  REQUIRE(!bad_sources.empty());
  for (const BadSource& bad : bad_sources) {
    INFO(bad.source.name << ": " << bad.what);
    const vgpu::CounterSnapshot before = device.counters();
    // One compile per fragment: each must fail again, with the whole log.
    for (const auto& alternatives : bad.fragments) {
      const auto err = catch_error([&] { (void)device.compile(bad.source); });
      REQUIRE(err.has_value());
      INFO(err->what());
      check_error(*err, vgpu::ErrorCategory::compile_error, "");
      bool found = false;
      for (const std::string& fragment : alternatives)
        found = found || err->problem().find(fragment) != std::string::npos;
      INFO("expected one of: " << Catch::Detail::stringify(alternatives));
      CHECK(found);
    }
    const vgpu::CounterSnapshot d = device.counters() - before;
    INFO(d.to_string());
    CHECK(d.compiles == 0);
    if (!bad.text_compiles) CHECK(d.source_compiles == 0);  // counts only compiles that produced code
    CHECK(d.l2_writes == 0);  // nothing is cached for a kernel that cannot run, even one whose text compiled
  }
  // The same device still compiles and runs a good kernel, at two workgroup sizes.
  for (std::uint32_t wg : {64u, 128u}) {
    vgpu::CompileOptions options;
    options.workgroup_size = {wg, 1, 1};
    const vgpu::Kernel good = device.compile(scale_add_source(backend.kind, scale_add_text(backend.kind)), options);
    check_scale_add(device, good, 1000, wg);
  }
}

}  // namespace vgpu_test::contract
