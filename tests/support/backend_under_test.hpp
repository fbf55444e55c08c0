// SPDX-License-Identifier: Apache-2.0
// tests/support/backend_under_test.hpp — which backends a test program tests (VGPU_TEST_BACKENDS),
// and the runner of the programs that test one backend per run, which ctest runs once per
// backend: an unavailable backend is a skip with its reason (exit code 77, ctest's
// SKIP_RETURN_CODE), never a silent pass.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/catch_session.hpp"
#include "vgpu/vgpu.hpp"

namespace vgpu::test {

/// Runtime options that allow only kind, whatever the environment says.
inline vgpu::RuntimeOptions only(vgpu::BackendKind kind) {
  vgpu::RuntimeOptions o;
  o.allowed = {kind};
  return o;
}

/// Returns "" when runtime can open a device of kind, else why not.
inline std::string why_unavailable(vgpu::Runtime& runtime, vgpu::BackendKind kind) {
  const std::string name(vgpu::to_string(kind));
  try {
    for (const vgpu::BackendStatus& st : runtime.backends())
      if (st.kind == kind) {
        if (!st.compiled_in) return "the " + name + " backend is not compiled in: " + st.reason;
        if (!st.available) return st.reason;
        if (runtime.devices().empty()) return "no " + name + " device was found";
        return "";
      }
    return "the registry does not know the " + name + " backend";
  } catch (const vgpu::Error& e) {
    return e.what();
  }
}

}  // namespace vgpu::test

namespace vgpu_test {

/// Returns the backends VGPU_TEST_BACKENDS names (comma list; empty: every one); throws
/// vgpu::Error(invalid_argument) for an unknown name.
inline std::vector<vgpu::BackendKind> requested_backend_kinds() {
  std::vector<vgpu::BackendKind> kinds;
  const char* env = std::getenv("VGPU_TEST_BACKENDS");
  if (env == nullptr) return kinds;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) kinds.push_back(vgpu::parse_backend_kind(item));
  return kinds;
}

/// Returns every device of Runtime::global() whose backend VGPU_TEST_BACKENDS names, opened.
inline std::vector<vgpu::Device> open_requested_devices() {
  const auto kinds = requested_backend_kinds();
  std::vector<vgpu::Device> out;
  for (const vgpu::DeviceInfo& info : vgpu::Runtime::global().devices())
    if (kinds.empty() || std::find(kinds.begin(), kinds.end(), info.backend) != kinds.end())
      out.push_back(vgpu::Runtime::global().open(info));
  return out;
}

/// Returns the one backend VGPU_TEST_BACKENDS names, or fallback when it is unset or empty.
inline vgpu::BackendKind single_backend_under_test(const char* fallback) {
  const char* v = std::getenv("VGPU_TEST_BACKENDS");
  return vgpu::parse_backend_kind(v && *v ? v : fallback);
}

/// Runs the Catch session of a program that tests kind alone: first prints "<title> on <id>
/// (<name>)<describe(info)>" — or, when kind has no device here, "SKIPPED <prefix>.<kind>: ..."
/// and returns 77; a listing (--list..., -h) skips both. kind_of reads the backend (it may throw
/// for a bad VGPU_TEST_BACKENDS: exit 2 with the message).
inline int run_single_backend(int argc, char* argv[], const char* title, const char* prefix,
                              const std::function<vgpu::BackendKind()>& kind_of,
                              const std::function<std::string(const vgpu::DeviceInfo&)>& describe = {}) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-h" || arg == "-?" || arg == "--help") listing = true;
  }
  if (!listing) {
    vgpu::BackendKind kind{};
    try {
      kind = kind_of();
    } catch (const vgpu::Error& e) {
      std::fprintf(stderr, "%s: bad VGPU_TEST_BACKENDS: %s\n", title, e.what());
      return 2;
    }
    const std::string name(vgpu::to_string(kind));
    vgpu::Runtime runtime(vgpu::test::only(kind));
    const std::string why = vgpu::test::why_unavailable(runtime, kind);
    if (!why.empty()) {
      std::printf("SKIPPED %s.%s: no %s device: %s\n", prefix, name.c_str(), name.c_str(), why.c_str());
      return 77;
    }
    const vgpu::DeviceInfo info = runtime.open(name + ":0").info();
    std::printf("%s on %s (%s)%s\n", title, info.id().c_str(), info.name.c_str(),
                describe ? describe(info).c_str() : "");
    std::fflush(stdout);
  }
  return run_catch_session(argc, argv);
}

}  // namespace vgpu_test
