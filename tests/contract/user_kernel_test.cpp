// SPDX-License-Identifier: Apache-2.0
// tests/contract/user_kernel_test.cpp — a user kernel (the scale-add of support/scale_add_kernel.hpp,
// in the backend's dialect) is right at awkward sizes, is compiled once (from source where the
// backend has a front end, stored to L2 where it keeps one), and is an L1 hit after that (a CPU
// callable is built again instead: its captures cannot be hashed, so it bypasses L1).
#include "contract/contract.hpp"
#include "support/scale_add_kernel.hpp"

namespace vgpu_test::contract {

CONTRACT_CASE("user kernel: right at awkward sizes, compiled once, then an L1 hit", "[user]", every_backend) {
  vgpu::Device device = open_device(backend);
  const vgpu::KernelSource source = fresh_user_kernel(backend);  // no earlier run stored its key in L2
  vgpu::CompileOptions options;
  options.workgroup_size = {64, 1, 1};

  const auto [kernel, first] = counted_compile(device, source, options);
  INFO("first compile: " << first.to_string());
  CHECK(first.source_compiles == (backend.compiles_source ? 1u : 0u));
  CHECK(first.compiles == 1);
  CHECK(first.l1_misses == 1);
  CHECK(first.l3_hits == 0);  // L3 holds built-ins only
  CHECK(first.l2_hits == 0);
  if (backend.has_l2() && why_no_l2_round_trip(backend, device).empty()) {
    CHECK(first.l2_misses == 1);
    if (backend.l2_extra_writes)
      CHECK(first.l2_writes >= 1);
    else
      CHECK(first.l2_writes == 1);
  } else if (!backend.has_l2()) {
    CHECK(first.l2_misses + first.l2_writes + first.l2_rejected == 0);
  }

  const auto [again, second] = counted_compile(device, source, options);
  INFO("second compile: " << second.to_string());
  CHECK(second.source_compiles == 0);
  if (backend.l1_keeps_user_kernels) {
    CHECK(second.compiles == 0);
    CHECK(second.l1_hits == 1);
  } else {
    CHECK(second.compiles == 1);
    CHECK(second.l1_hits == 0);
  }
  CHECK(again.key_hex() == kernel.key_hex());

  for (std::uint32_t n : {1u, 15u, 255u, 1000u, 65537u}) check_scale_add(device, kernel, n, 64);
}

}  // namespace vgpu_test::contract
