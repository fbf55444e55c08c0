// SPDX-License-Identifier: Apache-2.0
// tests/conformance/junit_report.hpp — the conformance suite's JUnit report with one test case
// per (case, device): `--junit FILE` runs the suite once per device under test, each in a child
// process of its own (`--device ID`, Catch's junit reporter into a part file), then merges the
// parts into FILE: one <testsuite> per device named vgpu-conformance.<id>, each <testcase> with
// classname vgpu-conformance.<id>, the real host name, and <skipped message=...> where the case
// had nothing to run on that device (skip_on). Thread-safety: skip_on may be called from any
// thread; the rest runs on main()'s thread.
#pragma once

#include <string>
#include <vector>

#include "vgpu/vgpu.hpp"

namespace vgpu_test {

/// Records that the running test case has nothing to check on device, and why (a feature or
/// backend it lacks); the per-device JUnit report marks the case skipped there, with why.
void skip_on(const vgpu::Device& device, const std::string& why);

/// Runs program (argv[0]) once per device id with `--device ID`, `--junit-part PART` and
/// catch_args (Catch's arguments, argv[0] first), then writes the merged report to junit.
/// Returns the runner's exit code: 2 when a child found bad arguments or nothing to run, else 1
/// when a case failed on some device (or a child died), else 0.
int run_per_device_junit(const std::string& program, const std::vector<std::string>& device_ids,
                         const std::vector<std::string>& catch_args, const std::string& junit);

/// In a child (`--junit-part PART`): writes the cases skip_on recorded to PART.skips, one
/// "case\tdevice\twhy" line each, for the parent's merge.
void write_skips(const std::string& part);

}  // namespace vgpu_test
