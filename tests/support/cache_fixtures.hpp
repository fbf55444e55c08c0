// tests/support/cache_fixtures.hpp — what the L2 and GPU-backend tests share: private temp
// directories, disk-store options and listings, shell quoting, backend-only runtimes, and
// running a child program that reports one key=value line.
// Test files that include it define VGPU_TEST_TMP_ROOT (the build gives each its own root).
#pragma once

#include <catch2/catch.hpp>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

#ifndef VGPU_TEST_TMP_ROOT
#error "VGPU_TEST_TMP_ROOT must be defined by the build"
#endif

namespace vgpu::test {

/// A fresh directory under VGPU_TEST_TMP_ROOT for one test, removed at the end of it.
struct TempDir {
  std::filesystem::path path;
  /// Creates <root>/<prefix>XXXXXX.
  explicit TempDir(const std::string& prefix) {
    std::filesystem::create_directories(VGPU_TEST_TMP_ROOT);
    std::string pattern = std::string(VGPU_TEST_TMP_ROOT) + "/" + prefix + "XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// Returns s quoted for /bin/sh.
inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Disk-store options for dir with a size cap.
inline cache::DiskStoreOptions options_for(const std::filesystem::path& dir, std::uint64_t max_bytes = 512ull << 20) {
  cache::DiskStoreOptions o;
  o.directory = dir;
  o.max_bytes = max_bytes;
  return o;
}

/// Every entry of kind in dir (checks payloads when verify).
inline std::vector<cache::DiskEntryInfo> entries(const std::filesystem::path& dir, cache::EntryKind kind,
                                                 bool verify) {
  cache::DiskStore store(options_for(dir));
  std::vector<cache::DiskEntryInfo> out;
  for (auto& e : store.list(verify))
    if (e.kind == kind) out.push_back(std::move(e));
  return out;
}

/// Runtime options that allow only kind, whatever the environment says.
inline RuntimeOptions only(BackendKind kind) {
  RuntimeOptions o;
  o.allowed = {kind};
  return o;
}

/// Returns "" when runtime can open a device of kind, else why not.
inline std::string why_unavailable(Runtime& runtime, BackendKind kind) {
  const std::string name(to_string(kind));
  try {
    for (const BackendStatus& st : runtime.backends())
      if (st.kind == kind) {
        if (!st.compiled_in) return "the " + name + " backend is not compiled in: " + st.reason;
        if (!st.available) return st.reason;
        if (runtime.devices().empty()) return "no " + name + " device was found";
        return "";
      }
    return "the registry does not know the " + name + " backend";
  } catch (const Error& e) {
    return e.what();
  }
}

/// What one run of a child program printed (one key=value line) and returned.
struct ChildRun {
  int status = -1;
  std::string output;                         // stdout and stderr
  std::map<std::string, std::string> values;  // the key=value line

  /// Returns the numeric value of key; fails the test when the child did not print it.
  std::uint64_t count(const std::string& key) const {
    const auto it = values.find(key);
    if (it == values.end()) FAIL("the child printed no " << key << "; output:\n" << output);
    return std::stoull(it->second);
  }
  /// Returns the text of key ("" when absent).
  std::string text(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? std::string() : it->second;
  }
  /// Returns whether the child exited 0 and reported result=ok.
  bool ok() const { return status == 0 && text("result") == "ok"; }
};

/// Runs command (a /bin/sh line; end it with 2>&1 to keep stderr too) and returns its output,
/// exit status and the key=value pairs of the line that holds "result=".
inline ChildRun run_child_command(const std::string& command) {
  ChildRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(run.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("result=") == std::string::npos) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word)
      if (const auto eq = word.find('='); eq != std::string::npos) run.values[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return run;
}

/// Runs vgpu-test-backend-child (at child) for backend on the scale-add kernel source, which
/// is written to source_file first, with the L2 store in cache_dir (disabled when asked) and
/// no other cache settings from this process's environment; extra_env is prepended as is
/// ("NAME=value ..." or "-u NAME ...", for the env command).
inline ChildRun run_backend_child(const std::string& child, const std::string& backend,
                                  const std::filesystem::path& source_file, std::string_view source,
                                  const std::filesystem::path& cache_dir, bool disable, std::uint32_t n,
                                  const std::string& extra_env = "") {
  if (!std::filesystem::exists(source_file)) {
    std::ofstream out(source_file);
    out << source;
    REQUIRE(out.good());
  }
  return run_child_command("env -u VGPU_CACHE_DISABLE -u VGPU_CACHE_MAX_BYTES -u VGPU_BACKEND -u VGPU_DEVICE " +
                           extra_env + " VGPU_LOG=warn VGPU_CACHE_DIR=" + quoted(cache_dir.string()) +
                           (disable ? " VGPU_CACHE_DISABLE=1 " : " ") + quoted(child) + " " + backend + " " +
                           quoted(source_file.string()) + " " + std::to_string(n) + " 2>&1");
}

/// Checks the first of two child runs on one cache directory: it compiled the kernel from
/// source, missed L2 and wrote the result there.
inline void check_compiled_and_stored(const ChildRun& first) {
  INFO("first run:\n" << first.output);
  REQUIRE(first.ok());
  CHECK(first.count("source_compiles") == 1);
  CHECK(first.count("l2_misses") >= 1);
  CHECK(first.count("l2_writes") >= 1);
  CHECK(first.count("l2_hits") == 0);
}

/// Checks that dir holds exactly one entry of kind, valid, under key and for fingerprint fp:
/// the key a test process computes for the child's kernel on the same device.
inline void check_single_entry(const std::filesystem::path& dir, cache::EntryKind kind, const cache::KernelKey& key,
                               const DeviceFingerprint& fp) {
  const auto found = entries(dir, kind, true);
  REQUIRE(found.size() == 1);
  CHECK(found[0].valid);
  CHECK(found[0].key_hex == key.hex());
  CHECK(found[0].fingerprint_text == fp.text);
}

/// Checks the second child run on the same directory: it loaded the kernel from L2, compiled
/// nothing and rejected nothing.
inline void check_loaded_from_l2(const ChildRun& second) {
  INFO("second run:\n" << second.output);
  REQUIRE(second.ok());
  CHECK(second.count("source_compiles") == 0);
  CHECK(second.count("l2_hits") >= 1);
  CHECK(second.count("l2_rejected") == 0);
  CHECK(second.text("store_rejected") == "none");
}

}  // namespace vgpu::test
