// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_untrusted_posix_test.cpp — the hostile-directory cases only POSIX systems can
// set up (l2_untrusted_dir_test.cpp has those of every OS): FIFOs, sockets, device nodes and
// symlinks to them planted where entries belong never block an operation (each runs in a
// forked child with a deadline, which is killed if it hangs) and are reported, never deleted;
// a read-only directory as a non-root user makes clear and remove_invalid say what they could
// not delete and why. Part of vgpu-test-l2-store (not built for Windows, which has no FIFOs,
// sockets or device nodes in a folder, and no fork).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "l2_untrusted_support.hpp"

namespace vgpu_test::untrusted {
namespace {

/// Runs body in a forked child and returns what its checks found ("" when all held). FAILs
/// the test when the child has not finished within deadline_s (the operation hung: the child
/// is killed) or died. The child never returns into Catch.
std::string run_in_child(const std::function<void(Checks&)>& body, int deadline_s = 20) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(out[0]);
    Checks checks;
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

TEST_CASE("FIFOs, sockets, devices and symlinks to them planted as entries: everything finishes and reports them",
          "[l2][untrusted]") {
  TempDir t("l2u-");
  const fs::path dir = t.path / "cache";
  const fs::path spirv = format_dir(dir) / "spirv", glbin = format_dir(dir) / "glbin";
  fs::create_directories(spirv);
  fs::create_directories(glbin);
  const fs::path outside_fifo = t.path / "outside-fifo";
  REQUIRE(::mkfifo(outside_fifo.c_str(), 0644) == 0);

  Planter planter{spirv, glbin};
  auto errno_why = [](int rc) { return rc == 0 ? std::string() : std::string(std::strerror(errno)); };
  planter.plant("a FIFO", [&](const fs::path& p) { return errno_why(::mkfifo(p.c_str(), 0644)); });
  planter.plant("a socket", [&](const fs::path& p) { return make_socket(p.parent_path(), p.filename().string()); });
  planter.plant("a symlink", [&](const fs::path& p) { return errno_why(::symlink("/dev/zero", p.c_str())); });
  planter.plant("a symlink", [&](const fs::path& p) { return errno_why(::symlink(outside_fifo.c_str(), p.c_str())); });
  planter.plant("a character device", [&](const fs::path& p) {
    return ::mknod(p.c_str(), S_IFCHR | 0644, ::makedev(1, 5)) == 0
               ? std::string()
               : std::string("mknod (needs CAP_MKNOD, e.g. root): ") + std::strerror(errno);
  });
  REQUIRE(planter.planted.size() >= 8);  // FIFO, socket and the two symlinks at least

  const std::string failures =
      run_in_child([&](Checks& c) { check_planted_entries(dir, planter.planted, planter.keys, c); });
  INFO(failures);
  CHECK(failures.empty());
  for (const Planted& p : planter.planted) {
    INFO(p.path);
    CHECK(present(p.path));
  }
  CHECK(fs::is_fifo(outside_fifo));
}

// ---- a read-only directory as a non-root user

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
  const std::string failures = run_in_child([&](Checks& c) {
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

}  // namespace
}  // namespace vgpu_test::untrusted
