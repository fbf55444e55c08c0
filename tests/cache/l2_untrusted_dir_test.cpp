// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_untrusted_dir_test.cpp — the L2 directory is untrusted input (docs/cache-format.md,
// "The directory is untrusted input"): a symlinked v<format> or kind folder never lets load,
// store, list, remove_invalid, clear or eviction read, write or delete what it points to;
// FIFOs, sockets, directories, devices and symlinks planted where entries belong never block
// an operation (each runs in a child process with a deadline) and are reported, never
// deleted; a read-only directory as a non-root user makes clear and remove_invalid say what
// they could not delete and why; an rm -rf of the cache between two stores does not switch
// L2 off. Part of vgpu-test-l2-store.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include "support/catch.hpp"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/cache_fixtures.hpp"
#include "support/valid_payloads.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/version.hpp"

namespace vgpu_test {
namespace {

using vgpu::cache::DiskEntryInfo;
using vgpu::cache::DiskLeftover;
using vgpu::cache::LoadOutcome;

const DeviceFingerprint kDevice = vgpu::test::fingerprint("backend=test;model=untrusted;vgpu_cache_format=1");
constexpr KernelKey kKey{0x0123456789abcdefull, 0x0011223344556677ull};

using vgpu_test::payload_for;  // payloads each kind's payload check accepts

fs::path format_dir(const fs::path& dir) { return dir / ("v" + std::to_string(vgpu::kCacheFormatVersion)); }

std::string entry_name(const KernelKey& key) { return key.hex() + ".vgc"; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

/// Every file under dir (symlinks not followed): relative path → what it is and holds.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (it->is_symlink())
      out[rel] = "link:" + fs::read_symlink(it->path()).string();
    else if (it->is_regular_file())
      out[rel] = "file:" + read_text(it->path());
    else if (it->is_directory())
      out[rel] = "dir";
    else
      out[rel] = "other";
  }
  return out;
}

/// Returns the bytes of a valid entry file of kind under key for kDevice (written by a store
/// in a scratch directory).
std::string valid_entry(EntryKind kind, const KernelKey& key, std::size_t payload_bytes) {
  TempDir scratch("l2u-scratch-");
  DiskStore store(options_for(scratch.path));
  REQUIRE(store.store(kind, key, kDevice, payload_for(kind, payload_bytes, 7), 0));
  return read_text(format_dir(scratch.path) / std::string(vgpu::cache::to_string(kind)) / entry_name(key));
}

/// Fills folder with what a vgpu kind folder could hold and more, all of which must survive
/// whatever vgpu does when folder is reached through a symlink: a valid entry of kind under
/// kKey (a load that followed the link would hit it), a garbage file named like an entry
/// (cost 0: the first an eviction would delete), an hour-old file named like a writer's temp
/// file, and files of any other name.
void fill_outside(const fs::path& folder, EntryKind kind) {
  fs::create_directories(folder);
  write_text(folder / entry_name(kKey), valid_entry(kind, kKey, 30000));
  write_text(folder / entry_name(KernelKey{0xdead, 0xbeef}), std::string(40000, 'g'));
  write_text(folder / ".tmp-00000000000000000000000000000001-Ab12Cd", "old temp");
  timespec old[2];
  ::clock_gettime(CLOCK_REALTIME, &old[0]);
  old[0].tv_sec -= 3600;
  old[1] = old[0];
  REQUIRE(::utimensat(AT_FDCWD, (folder / ".tmp-00000000000000000000000000000001-Ab12Cd").c_str(), old, 0) == 0);
  write_text(folder / "notes.txt", "my notes");
  write_text(folder / "thesis.tex", "\\documentclass{article}");
}

/// Checks that list(true) reports folder as an unusable folder (a symlink or not a directory).
void check_folder_reported(const std::vector<DiskEntryInfo>& items, const fs::path& folder) {
  const auto it = std::find_if(items.begin(), items.end(), [&](const DiskEntryInfo& e) { return e.path == folder; });
  INFO("folder " << folder);
  CHECK(it != items.end());  // not REQUIRE: the test goes on to check the files outside
  if (it == items.end()) return;
  CHECK(it->folder);
  CHECK_FALSE(it->valid);
  CHECK_FALSE(it->deletable);
  CHECK_THAT(it->problem, Catch::Matchers::StartsWith("type: "));
  CHECK_FALSE(it->fix.empty());
}

/// Checks that left holds folder, left alone on purpose, with a Fix hint.
void check_folder_left(const std::vector<DiskLeftover>& left, const fs::path& folder) {
  const auto it = std::find_if(left.begin(), left.end(), [&](const DiskLeftover& l) { return l.item.path == folder; });
  INFO("folder " << folder);
  CHECK(it != left.end());
  if (it == left.end()) return;
  CHECK_FALSE(it->failed);
  CHECK_THAT(it->why, Catch::Matchers::ContainsSubstring("Fix: remove it"));
}

/// Failed checks of a child process, sent back to the parent as text.
struct ChildChecks {
  std::string failures;
  /// Records message when ok is false.
  void expect(bool ok, const std::string& message) {
    if (!ok) failures += message + "\n";
  }
};

/// Runs body in a forked child and returns what its checks found ("" when all held). FAILs
/// the test when the child has not finished within deadline_s (the operation hung: the child
/// is killed) or died. The child never returns into Catch.
std::string run_in_child(const std::function<void(ChildChecks&)>& body, int deadline_s = 20) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(out[0]);
    ChildChecks checks;
    try {
      body(checks);
    } catch (const std::exception& e) {
      checks.failures += std::string("exception: ") + e.what() + "\n";
    } catch (...) {
      checks.failures += "unknown exception\n";
    }
    const char* p = checks.failures.data();
    std::size_t n = checks.failures.size();
    while (n > 0) {
      const ssize_t w = ::write(out[1], p, n);
      if (w <= 0) break;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(out[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  bool finished = false;
  for (;;) {
    const auto left_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left_ms <= 0) break;
    pollfd p{out[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left_ms));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[4096];
    const ssize_t got = ::read(out[0], buf, sizeof buf);
    if (got <= 0) {
      finished = true;  // the child closed its end: done
      break;
    }
    text.append(buf, static_cast<std::size_t>(got));
  }
  ::close(out[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!finished)
    FAIL("the operation did not finish within " << deadline_s << " s (it hangs); checks so far:\n" << text);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("the child died (status " << status << "):\n" << text);
  return text;
}

/// Returns whether path exists as itself (lstat: a symlink counts, its target is not looked at).
bool present(const fs::path& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

// ---- symlinked folders

TEST_CASE("a symlinked v<format> folder: nothing it points to is read, written or deleted", "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  for (EntryKind kind : {EntryKind::spirv, EntryKind::gl_program_binary, EntryKind::vk_pipeline_cache})
    fill_outside(outside / std::string(vgpu::cache::to_string(kind)), kind);
  write_text(outside / "notes.txt", "top-level notes");
  const auto before = snapshot(outside);

  SECTION("a store opened on it is off, and maintenance reports the folder") {
    fs::create_directories(dir);
    fs::create_directory_symlink(outside, format_dir(dir));
    DiskStore store(options_for(dir, 60000));
    CHECK_FALSE(store.enabled());
    CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice));
    CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{1, 1}, kDevice, payload_for(EntryKind::spirv, 100, 1), 1));
    const auto items = store.list(true);
    CHECK(items.size() == 1);
    check_folder_reported(items, format_dir(dir));
    std::vector<DiskLeftover> left;
    CHECK(store.remove_invalid(&left) == 0);
    check_folder_left(left, format_dir(dir));
    CHECK(store.clear(&left) == 0);
    check_folder_left(left, format_dir(dir));
  }
  SECTION("a running store whose v<format> folder becomes a symlink turns L2 off without touching it") {
    DiskStore store(options_for(dir, 60000));
    REQUIRE(store.enabled());
    REQUIRE(store.store(EntryKind::spirv, KernelKey{1, 2}, kDevice, payload_for(EntryKind::spirv, 100, 2), 1));
    fs::remove_all(format_dir(dir));
    fs::create_directory_symlink(outside, format_dir(dir));
    LoadOutcome outcome = LoadOutcome::hit;
    CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice, &outcome));  // the outside entry is valid for kKey
    CHECK(outcome == LoadOutcome::disabled);
    for (std::uint64_t i = 0; i < 8; ++i)  // 8 × 10 kB over a 60 kB cap: would evict
      CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{2, i}, kDevice, payload_for(EntryKind::spirv, 10000, 3), 1));
    CHECK(store.stats().write_failures == 8);
    CHECK(store.stats().evictions == 0);
    store.reject(EntryKind::spirv, kKey, "driver");
    check_folder_reported(store.list(true), format_dir(dir));
    std::vector<DiskLeftover> left;
    CHECK(store.remove_invalid(&left) == 0);
    check_folder_left(left, format_dir(dir));
    CHECK(store.clear(&left) == 0);
    check_folder_left(left, format_dir(dir));
  }
  CHECK(snapshot(outside) == before);
}

TEST_CASE("symlinked or non-directory kind folders: L2 is off for those kinds and nothing outside is touched",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  fill_outside(outside / "spirv", EntryKind::spirv);
  fill_outside(outside / "glbin", EntryKind::gl_program_binary);
  write_text(outside / "a-file", "not a folder");
  const auto before = snapshot(outside);
  const fs::path v = format_dir(dir);
  fs::create_directories(v / "vkpc");
  fs::create_directory_symlink(outside / "spirv", v / "spirv");
  fs::create_directory_symlink(outside / "glbin", v / "glbin");
  fs::create_symlink(outside / "a-file", v / "cubin");  // a symlink to a file
  write_text(v / "select", "a regular file where a folder belongs");

  DiskStore store(options_for(dir, 60000));
  REQUIRE(store.enabled());
  LoadOutcome outcome = LoadOutcome::hit;
  CHECK_FALSE(store.load(EntryKind::spirv, kKey, kDevice, &outcome));  // outside/spirv holds a valid kKey entry
  CHECK(outcome == LoadOutcome::disabled);
  CHECK_FALSE(store.load(EntryKind::gl_program_binary, kKey, kDevice));
  CHECK_FALSE(store.store(EntryKind::spirv, KernelKey{3, 1}, kDevice, payload_for(EntryKind::spirv, 100, 4), 1));
  CHECK_FALSE(
      store.store(EntryKind::cuda_binary, KernelKey{3, 2}, kDevice, payload_for(EntryKind::cuda_binary, 100, 4), 1));
  CHECK_FALSE(
      store.store(EntryKind::selection, KernelKey{3, 3}, kDevice, payload_for(EntryKind::selection, 100, 4), 1));
  CHECK(store.stats().write_failures == 3);

  // vkpc still works; enough of it goes over the cap, and eviction only deletes vkpc entries.
  for (std::uint64_t i = 0; i < 10; ++i)
    REQUIRE(store.store(EntryKind::vk_pipeline_cache, KernelKey{4, i}, kDevice,
                        payload_for(EntryKind::vk_pipeline_cache, 10000, 5), 100));
  CHECK(store.stats().evictions >= 4);
  REQUIRE(store.load(EntryKind::vk_pipeline_cache, KernelKey{4, 9}, kDevice));

  const auto items = store.list(true);
  for (const char* kind : {"spirv", "glbin", "cubin", "select"}) check_folder_reported(items, v / kind);
  std::vector<DiskLeftover> left;
  CHECK(store.remove_invalid(&left) == 0);
  for (const char* kind : {"spirv", "glbin", "cubin", "select"}) check_folder_left(left, v / kind);
  CHECK(store.clear(&left) >= 1);  // the remaining vkpc entries
  CHECK(left.size() == 4);
  for (const char* kind : {"spirv", "glbin", "cubin", "select"}) check_folder_left(left, v / kind);
  CHECK(snapshot(outside) == before);
  CHECK(fs::is_symlink(v / "spirv"));
  CHECK(fs::is_regular_file(fs::symlink_status(v / "select")));
}

TEST_CASE("a symlinked kind folder gives one warning naming it with a Fix hint", "[l2][untrusted]") {
  if (const char* level = std::getenv("VGPU_LOG");
      level && (std::string(level) == "error" || std::string(level) == "quiet")) {
    WARN("skipped: VGPU_LOG=" << level << " hides the warning this test counts");
    return;
  }
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache", outside = t.path / "outside";
  fill_outside(outside, EntryKind::spirv);
  fs::create_directories(format_dir(dir));
  fs::create_directory_symlink(outside, format_dir(dir) / "spirv");
  const fs::path err = t.path / "stderr.txt";
  const std::string failures = run_in_child([&](ChildChecks& c) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    c.expect(fd >= 0 && ::dup2(fd, 2) == 2, "cannot redirect stderr");
    DiskStore store(options_for(dir));
    for (std::uint64_t i = 0; i < 3; ++i) {
      c.expect(!store.load(EntryKind::spirv, kKey, kDevice), "a load through the symlink hit");
      c.expect(!store.store(EntryKind::spirv, KernelKey{5, i}, kDevice, payload_for(EntryKind::spirv, 100, 6), 1),
               "a store through the symlink succeeded");
    }
  });
  INFO(failures);
  CHECK(failures.empty());
  std::istringstream lines(read_text(err));
  std::vector<std::string> warnings;
  const std::string folder = (format_dir(dir) / "spirv").string();
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("vgpu: warning: ")) warnings.push_back(line);
  INFO("stderr:\n" << read_text(err));
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("'" + folder + "'"));
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("symlink"));
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("Fix: remove it"));
  // What it means for the user, said the right way round.
  CHECK_THAT(warnings[0], Catch::Matchers::ContainsSubstring("); spirv entries are not cached on disk. Fix:"));
}

// ---- things that are not files where entries belong

namespace {

/// One planted non-file: its path and the words list() must use for it.
struct Planted {
  fs::path path;
  std::string type_text;  // e.g. "a FIFO"
};

/// Binds a Unix socket at folder/name (through /proc/self/fd, so a long path fits sun_path);
/// returns "" or why it could not.
std::string make_socket(const fs::path& folder, const std::string& name) {
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return std::string("open: ") + std::strerror(errno);
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string where = "/proc/self/fd/" + std::to_string(dir) + "/" + name;
  std::string why;
  if (s < 0)
    why = std::string("socket: ") + std::strerror(errno);
  else if (where.size() >= sizeof addr.sun_path)
    why = "path too long";
  else {
    std::memcpy(addr.sun_path, where.c_str(), where.size() + 1);
    if (::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
      why = std::string("bind: ") + std::strerror(errno);
  }
  if (s >= 0) ::close(s);
  ::close(dir);
  return why;
}

}  // namespace

TEST_CASE("FIFOs, sockets, directories, devices and symlinks planted as entries: everything finishes and reports them",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  const fs::path spirv = format_dir(dir) / "spirv", glbin = format_dir(dir) / "glbin";
  fs::create_directories(spirv);
  fs::create_directories(glbin);
  const fs::path outside_fifo = t.path / "outside-fifo";
  REQUIRE(::mkfifo(outside_fifo.c_str(), 0644) == 0);

  // Each kind of thing twice: under an entry name (keys {6, i}) and under another name.
  std::vector<Planted> planted;
  std::vector<KernelKey> planted_keys;
  std::uint64_t next = 0;
  auto plant = [&](const std::string& type_text, const std::function<std::string(const fs::path&)>& make) {
    const KernelKey key{6, next++};
    for (const fs::path& p : {spirv / entry_name(key), glbin / ("junk-" + std::to_string(key.lo))}) {
      const std::string why = make(p);
      if (!why.empty()) {
        WARN("skipping " << type_text << " at " << p << ": " << why);
        return;
      }
      planted.push_back({p, type_text});
    }
    planted_keys.push_back(key);
  };
  auto errno_why = [](int rc) { return rc == 0 ? std::string() : std::string(std::strerror(errno)); };
  plant("a FIFO", [&](const fs::path& p) { return errno_why(::mkfifo(p.c_str(), 0644)); });
  plant("a socket", [&](const fs::path& p) { return make_socket(p.parent_path(), p.filename().string()); });
  plant("a directory", [&](const fs::path& p) {
    fs::create_directories(p / "inside");
    write_text(p / "inside" / "file", "x");
    return std::string();
  });
  plant("a symlink", [&](const fs::path& p) { return errno_why(::symlink("/dev/zero", p.c_str())); });
  plant("a symlink", [&](const fs::path& p) { return errno_why(::symlink(outside_fifo.c_str(), p.c_str())); });
  plant("a character device", [&](const fs::path& p) {
    return ::mknod(p.c_str(), S_IFCHR | 0644, ::makedev(1, 5)) == 0
               ? std::string()
               : std::string("mknod (needs CAP_MKNOD, e.g. root): ") + std::strerror(errno);
  });
  REQUIRE(planted.size() >= 8);  // FIFO, socket, directory and the two symlinks at least

  const std::string failures = run_in_child([&](ChildChecks& c) {
    DiskStore store(options_for(dir, 60000));
    c.expect(store.enabled(), "the store is off");
    for (const KernelKey& key : planted_keys) {
      LoadOutcome outcome = LoadOutcome::hit;
      c.expect(!store.load(EntryKind::spirv, key, kDevice, &outcome), "a load of " + key.hex() + " hit");
      c.expect(outcome == LoadOutcome::rejected, "a load of " + key.hex() + " was not counted as rejected");
      c.expect(!store.store(EntryKind::spirv, key, kDevice, payload_for(EntryKind::spirv, 100, 7), 1),
               "a store replaced the non-file at " + key.hex());
    }
    c.expect(store.stats().rejected.at("type") == planted_keys.size(), "rejections are not counted under 'type'");
    // Other keys work, and enough of them evict (the walk meets every planted thing).
    for (std::uint64_t i = 0; i < 10; ++i)
      c.expect(store.store(EntryKind::spirv, KernelKey{7, i}, kDevice, payload_for(EntryKind::spirv, 10000, 8), 100),
               "a plain store failed");
    c.expect(store.stats().evictions >= 4, "no eviction ran");
    c.expect(static_cast<bool>(store.load(EntryKind::spirv, KernelKey{7, 9}, kDevice)), "the newest entry is gone");
    for (bool verify : {false, true}) {
      const auto items = store.list(verify);
      for (const Planted& p : planted) {
        const auto it =
            std::find_if(items.begin(), items.end(), [&](const DiskEntryInfo& e) { return e.path == p.path; });
        c.expect(it != items.end(), "list() does not report " + p.path.string());
        if (it == items.end()) continue;
        c.expect(!it->valid && !it->deletable, p.path.string() + " is listed as valid or deletable");
        c.expect(it->problem.starts_with("type: " + p.type_text),
                 p.path.string() + ": problem '" + it->problem + "', expected 'type: " + p.type_text + "'");
      }
    }
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<DiskLeftover> left;
      if (pass == 0)
        store.remove_invalid(&left);
      else
        store.clear(&left);
      for (const Planted& p : planted) {
        const auto it =
            std::find_if(left.begin(), left.end(), [&](const DiskLeftover& l) { return l.item.path == p.path; });
        c.expect(it != left.end() && !it->failed && it->why.find("Fix: ") != std::string::npos,
                 (pass ? "clear" : "remove_invalid") + std::string(" does not report ") + p.path.string());
      }
    }
  });
  INFO(failures);
  CHECK(failures.empty());
  for (const Planted& p : planted) {
    INFO(p.path);
    CHECK(present(p.path));
  }
  CHECK(fs::exists(spirv / entry_name(KernelKey{6, 2}) / "inside" / "file"));  // the planted directory's content
  CHECK(fs::is_fifo(outside_fifo));
}

// ---- a read-only directory as a non-root user

namespace {

constexpr uid_t kNobody = 65534;

/// In a forked child: drops to uid/gid 65534 when running as root (setgroups, setresgid,
/// setresuid). Returns "" or why it could not.
std::string drop_to_nobody() {
  if (::geteuid() != 0) return "";
  if (::setgroups(0, nullptr) != 0) return std::string("setgroups: ") + std::strerror(errno);
  if (::setresgid(kNobody, kNobody, kNobody) != 0) return std::string("setresgid: ") + std::strerror(errno);
  if (::setresuid(kNobody, kNobody, kNobody) != 0) return std::string("setresuid: ") + std::strerror(errno);
  return "";
}

}  // namespace

TEST_CASE("a read-only directory as a non-root user: clear and remove_invalid say what they could not delete and why",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  {
    DiskStore store(options_for(dir));
    for (std::uint64_t i = 0; i < 3; ++i)
      REQUIRE(store.store(EntryKind::spirv, KernelKey{8, i}, kDevice, payload_for(EntryKind::spirv, 1000, 9), 1));
  }
  const fs::path corrupt = format_dir(dir) / "spirv" / entry_name(KernelKey{8, 0});
  {
    std::string bytes = read_text(corrupt);
    bytes.back() ^= 1;
    write_text(corrupt, bytes);
  }
  fs::permissions(t.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  if (::geteuid() != 0)  // not root: make the folders read-only for ourselves instead
    for (const fs::path& p : {dir, format_dir(dir), format_dir(dir) / "spirv"})
      fs::permissions(p, fs::perms::owner_read | fs::perms::owner_exec);

  std::string skipped;
  const fs::path skip_file = t.path / "skip.txt";
  const std::string failures = run_in_child([&](ChildChecks& c) {
    if (const std::string why = drop_to_nobody(); !why.empty()) {
      write_text(skip_file, why);
      return;
    }
    DiskStore store(options_for(dir));
    c.expect(!store.enabled(), "the store is on in a read-only directory");
    std::vector<DiskLeftover> left;
    c.expect(store.remove_invalid(&left) == 0, "remove_invalid reports a deletion");
    c.expect(left.size() == 1, "remove_invalid reports " + std::to_string(left.size()) + " leftovers, expected 1");
    for (const auto& l : left) {
      c.expect(l.item.path == corrupt, "remove_invalid left " + l.item.path.string());
      c.expect(l.failed, "the leftover is not marked as a failed deletion");
      c.expect(l.why.find("Permission denied") != std::string::npos && l.why.find("Fix: ") != std::string::npos,
               "why: " + l.why);
    }
    c.expect(store.clear(&left) == 0, "clear reports a deletion");
    c.expect(left.size() == 3, "clear reports " + std::to_string(left.size()) + " leftovers, expected 3");
    for (const auto& l : left)
      c.expect(
          l.failed && l.why.find("Permission denied") != std::string::npos && l.why.find("Fix: ") != std::string::npos,
          "clear: " + l.item.path.string() + ": " + l.why);
  });
  if (fs::exists(skip_file)) {
    WARN("skipped: cannot drop to uid/gid 65534: " << read_text(skip_file));
    return;
  }
  INFO(failures);
  CHECK(failures.empty());
  if (::geteuid() != 0)
    for (const fs::path& p : {dir, format_dir(dir), format_dir(dir) / "spirv"})
      fs::permissions(p, fs::perms::owner_all);
  for (std::uint64_t i = 0; i < 3; ++i) CHECK(fs::exists(format_dir(dir) / "spirv" / entry_name(KernelKey{8, i})));
}

// ---- rm -rf under a running process

TEST_CASE("rm -rf of the cache directory between two stores: the second store re-creates it and writes",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  DiskStore store(options_for(dir));
  REQUIRE(store.enabled());
  REQUIRE(store.store(EntryKind::spirv, KernelKey{9, 1}, kDevice, payload_for(EntryKind::spirv, 500, 10), 1));
  fs::remove_all(dir);
  REQUIRE(store.store(EntryKind::spirv, KernelKey{9, 2}, kDevice, payload_for(EntryKind::spirv, 600, 11), 1));
  CHECK(fs::is_regular_file(format_dir(dir) / "spirv" / entry_name(KernelKey{9, 2})));
  CHECK(store.enabled());
  CHECK(store.load(EntryKind::spirv, KernelKey{9, 2}, kDevice));
  // Removed again, this time with another kind: made again too.
  fs::remove_all(dir);
  REQUIRE(store.store(EntryKind::gl_program_binary, KernelKey{9, 3}, kDevice,
                      payload_for(EntryKind::gl_program_binary, 700, 12), 1));
  CHECK(store.load(EntryKind::gl_program_binary, KernelKey{9, 3}, kDevice));
  CHECK(store.stats().write_failures == 0);
  // A new store on the removed directory is on as well.
  fs::remove_all(dir);
  DiskStore fresh(options_for(dir));
  CHECK(fresh.enabled());
}

}  // namespace vgpu_test
