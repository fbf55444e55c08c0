// SPDX-License-Identifier: Apache-2.0
// tests/support/cache_fixtures.hpp — what the L2, selection and backend tests share: private
// temp directories, disk-store options and listings, file bytes, fingerprints, shell quoting,
// running commands and child programs that report one key=value line, backend-only runtimes,
// and the names those tests use everywhere (imported into vgpu_test at the end).
// Test files that include it define VGPU_TEST_TMP_ROOT (the build gives each its own root).
#pragma once

#include "support/catch.hpp"
#include <stdlib.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#else
#include <process.h>  // _getpid
// Windows: system() and _pclose() return the program's exit code itself.
#define WIFEXITED(status) true
#define WEXITSTATUS(status) (status)
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "support/backend_under_test.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
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
    // Appended piecewise: GCC 12 misreads the inlined chain of operator+ (a false -Warray-bounds).
    std::string pattern = VGPU_TEST_TMP_ROOT "/";
    pattern.append(prefix).append("XXXXXX");
#if defined(_WIN32)
    // No mkdtemp: six random characters, again until create_directory makes a new folder.
    pattern.resize(pattern.size() - 6);
    std::random_device random;
    for (int attempt = 0;; ++attempt) {
      REQUIRE(attempt < 100);
      std::string name = pattern;
      for (int i = 0; i < 6; ++i) name += "abcdefghijklmnopqrstuvwxyz0123456789"[random() % 36];
      if (std::filesystem::create_directory(name)) {
        path = name;
        return;
      }
    }
#else
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
#endif
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// Returns a fingerprint whose text is text (hashed as devices hash theirs).
inline DeviceFingerprint fingerprint(const std::string& text) {
  DeviceFingerprint fp;
  fp.text = text;
  fp.hash = cache::hash64(text);
  return fp;
}

/// Returns what, made unique to this process and moment (a salt, a kernel's version or comment
/// no other test and no earlier run used).
inline std::string unique_name(const std::string& what) {
#if defined(_WIN32)
  const long pid = ::_getpid();
#else
  const long pid = ::getpid();
#endif
  return what + "-" + std::to_string(pid) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// Returns the key of a Vulkan device's one pipeline-cache entry (docs/cache-format.md).
inline cache::KernelKey pipeline_cache_key(const DeviceInfo& info) {
  return cache::KernelKey{cache::hash64("vk-pipeline-cache"), info.fingerprint.hash};
}

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
inline std::vector<cache::DiskEntryInfo> entries(const std::filesystem::path& dir, cache::EntryKind kind, bool verify) {
  cache::DiskStore store(options_for(dir));
  std::vector<cache::DiskEntryInfo> out;
  for (auto& e : store.list(verify))
    if (e.kind == kind) out.push_back(std::move(e));
  return out;
}

/// The device selections stored in dir (key text "select;..."), without the pointers beside them.
inline std::vector<cache::DiskEntryInfo> selection_entries(const std::filesystem::path& dir, bool verify) {
  std::vector<cache::DiskEntryInfo> out;
  for (auto& e : entries(dir, cache::EntryKind::selection, verify))
    if (e.fingerprint_text.starts_with("select;")) out.push_back(std::move(e));
  return out;
}

/// The pointers to each class's last selection stored in dir (key text "select-last;...",
/// docs/selection.md: following a persisted choice without enumerating).
inline std::vector<cache::DiskEntryInfo> selection_pointer_entries(const std::filesystem::path& dir, bool verify) {
  std::vector<cache::DiskEntryInfo> out;
  for (auto& e : entries(dir, cache::EntryKind::selection, verify))
    if (e.fingerprint_text.starts_with("select-last;")) out.push_back(std::move(e));
  return out;
}

/// Returns the bytes of the file at p (empty when it cannot be read).
inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Replaces the file at p with bytes.
inline void write_bytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
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
  /// Returns how often the store rejected an entry for reason, from the "store_rejected" value
  /// ("a:1,b:2", or "none") that vgpu-test-backend-child prints.
  std::uint64_t rejected(const std::string& reason) const {
    std::istringstream in(text("store_rejected"));
    std::string item;
    while (std::getline(in, item, ','))
      if (item.starts_with(reason + ":")) return std::stoull(item.substr(reason.size() + 1));
    return 0;
  }
  /// Returns whether the child exited 0 and reported result=ok.
  bool ok() const { return status == 0 && text("result") == "ok"; }
};

/// Runs command (a /bin/sh line; end it with 2>&1 to keep stderr too); returns its exit status
/// (-1 when a signal ended it) and its output.
inline std::pair<int, std::string> run_command(const std::string& command) {
  std::string out;
#if defined(_WIN32)
  FILE* pipe = ::_popen(command.c_str(), "r");
#else
  FILE* pipe = ::popen(command.c_str(), "r");
#endif
  REQUIRE(pipe != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
#if defined(_WIN32)
  const int status = ::_pclose(pipe);
#else
  const int status = ::pclose(pipe);
#endif
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Runs command as run_command does and returns its output, exit status and the key=value
/// pairs of the line that holds "result=".
inline ChildRun run_child_command(const std::string& command) {
  ChildRun run;
  std::tie(run.status, run.output) = run_command(command);
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

/// Checks a later child run on the same directory (the second, or the one after a repair): it
/// loaded the kernel from L2, compiled nothing and rejected nothing.
inline void check_loaded_from_l2(const ChildRun& second) {
  INFO("run on the stored entry:\n" << second.output);
  REQUIRE(second.ok());
  CHECK(second.count("source_compiles") == 0);
  CHECK(second.count("l2_hits") >= 1);
  CHECK(second.count("l2_rejected") == 0);
  CHECK(second.text("store_rejected") == "none");
}

}  // namespace vgpu::test

namespace vgpu_test {

// The vocabulary of the cache, selection and backend tests, declared once for all of them.
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using vgpu::DeviceFingerprint;
using vgpu::cache::DiskStore;
using vgpu::cache::EntryKind;
using vgpu::cache::KernelKey;
using vgpu::test::ChildRun;
using vgpu::test::options_for;
using vgpu::test::quoted;
using vgpu::test::TempDir;

}  // namespace vgpu_test
