// cache/src/disk_store_directory.cpp — walking the L2 directory: the first-use size scan,
// cost-aware eviction, list/verify, remove_invalid and clear.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "disk_store_impl.hpp"
#include "payload_check.hpp"
#include "vgpu/cache/disk_store.hpp"

namespace vgpu::cache {
namespace fs = std::filesystem;
using detail::EntryHeader;
using detail::errno_text;
using detail::Fd;
using detail::for_each_entry_file;
using detail::Problem;

namespace detail {

bool is_temp_name(const std::string& name) { return name.starts_with(kTempPrefix); }

void remove_stale_temps(const fs::path& root, std::int64_t max_age_s) {
  const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
  for (EntryKind kind : kAllKinds) {
    std::error_code ec;
    fs::directory_iterator it(root / std::string(to_string(kind)), ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      if (!is_temp_name(it->path().filename().string())) continue;
      struct stat st;
      if (::lstat(it->path().c_str(), &st) == 0 && now - st.st_mtim.tv_sec > max_age_s) ::unlink(it->path().c_str());
    }
  }
}

}  // namespace detail

void DiskStore::Impl::ensure_scanned() {
  std::lock_guard lock(mutex);
  if (scanned) return;
  for_each_entry_file(root, [&](EntryKind, const fs::path& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      account_locked(path.string(), static_cast<std::uint64_t>(st.st_size));
  });
  scanned = true;
}

void DiskStore::Impl::evict() {
  {
    std::lock_guard lock(mutex);
    if (evicting) {
      evict_again = true;
      return;
    }
    evicting = true;
  }
  for (;;) {
    evict_pass();
    std::lock_guard lock(mutex);
    if (evict_again && total_bytes > options.max_bytes) {
      evict_again = false;
      continue;
    }
    evicting = evict_again = false;
    return;
  }
}

void DiskStore::Impl::evict_pass() {
  struct Candidate {
    std::string path;
    std::uint64_t file_bytes = 0, payload_bytes = 0, cost_us = 0;
    std::int64_t mtime = 0;
  };
  std::vector<Candidate> all;
  std::uint64_t total = 0;
  for_each_entry_file(root, [&](EntryKind, const fs::path& path) {
    Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (f.fd < 0 || ::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    Candidate c{path.string(), static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_size), 0,
                detail::mtime_ns(st)};
    Problem why;
    if (auto h = detail::read_header(f.fd, c.file_bytes, why)) {
      c.payload_bytes = h->payload_bytes;
      c.cost_us = h->cost_us;
    }  // an unreadable entry keeps cost 0: it goes first
    total += c.file_bytes;
    all.push_back(std::move(c));
  });
  const std::uint64_t target = options.max_bytes - options.max_bytes / 10;
  std::unordered_set<std::string> removed;
  if (total > options.max_bytes) {
    // a before b when cost_a / bytes_a < cost_b / bytes_b, compared exactly.
    __extension__ using u128 = unsigned __int128;
    std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
      const u128 lhs = u128(a.cost_us) * std::max<std::uint64_t>(b.payload_bytes, 1);
      const u128 rhs = u128(b.cost_us) * std::max<std::uint64_t>(a.payload_bytes, 1);
      if (lhs != rhs) return lhs < rhs;
      if (a.mtime != b.mtime) return a.mtime < b.mtime;
      return a.path < b.path;
    });
    for (const Candidate& c : all) {
      if (total <= target) break;
      if (::unlink(c.path.c_str()) == 0) {
        removed.insert(c.path);
      } else if (errno != ENOENT) {
        continue;  // still there: still counts
      }
      total -= c.file_bytes;
    }
  }
  std::lock_guard lock(mutex);
  stats.evictions += removed.size();
  // Rebuild the accounting from the scan; keep entries this process wrote meanwhile.
  std::unordered_map<std::string, std::uint64_t> fresh;
  std::uint64_t fresh_total = 0;
  for (const Candidate& c : all)
    if (!removed.count(c.path)) fresh.emplace(c.path, c.file_bytes), fresh_total += c.file_bytes;
  for (const auto& [path, bytes] : bytes_of)
    if (!removed.count(path) && fresh.emplace(path, bytes).second) fresh_total += bytes;
  bytes_of = std::move(fresh);
  total_bytes = fresh_total;
  scanned = true;
}

std::vector<DiskEntryInfo> DiskStore::list(bool verify) const {
  std::vector<DiskEntryInfo> out;
  for_each_entry_file(impl_->root, [&](EntryKind kind, const fs::path& path) {
    DiskEntryInfo info;
    info.path = path;
    info.kind = kind;
    const std::string name = path.filename().string();
    info.key_hex =
        name.ends_with(detail::kEntrySuffix) ? name.substr(0, name.size() - detail::kEntrySuffix.size()) : name;
    Problem why;
    Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
      if (errno == ENOENT) return;  // deleted since the directory was read
      why = Problem{"type", "cannot open: " + errno_text(errno)};
    } else {
      info.file_bytes = static_cast<std::uint64_t>(st.st_size);
      if (!S_ISREG(st.st_mode)) why = Problem{"type", "not a regular file"};
    }
    const auto key = detail::key_from_hex(info.key_hex);
    if (!why && (!key || !name.ends_with(detail::kEntrySuffix)))
      why = Problem{"name", "the file name is not <32 hex digits>" + std::string(detail::kEntrySuffix)};
    std::optional<EntryHeader> header;
    if (!why) header = detail::read_header(f.fd, info.file_bytes, why);
    if (header) {
      info.payload_bytes = header->payload_bytes;
      info.cost_us = header->cost_us;
      info.fingerprint_text = header->fingerprint_text;
    }
    if (!why) why = detail::check_identity(*header, kind, *key);
    if (!why && verify)
      if (auto payload = detail::read_payload(f.fd, *header, why)) why = detail::check_payload(kind, *payload);
    info.valid = !why;
    if (why) info.problem = why.text();
    out.push_back(std::move(info));
  });
  std::sort(out.begin(), out.end(), [](const DiskEntryInfo& a, const DiskEntryInfo& b) { return a.path < b.path; });
  return out;
}

std::uint64_t DiskStore::remove_invalid() {
  Impl& s = *impl_;
  std::uint64_t removed = 0;
  for (const DiskEntryInfo& e : list(true)) {
    if (e.valid || ::unlink(e.path.c_str()) != 0) continue;
    ++removed;
    std::lock_guard lock(s.mutex);
    ++s.stats.rejected[e.problem.substr(0, e.problem.find(':'))];
    s.forget_locked(e.path.string());
  }
  detail::remove_stale_temps(s.root, 600);
  return removed;
}

std::uint64_t DiskStore::clear() {
  Impl& s = *impl_;
  std::uint64_t removed = 0;
  for_each_entry_file(s.root, [&](EntryKind, const fs::path& path) {
    if (::unlink(path.c_str()) == 0) ++removed;
  });
  detail::remove_stale_temps(s.root, 60);
  std::lock_guard lock(s.mutex);
  s.bytes_of.clear();
  s.total_bytes = 0;
  s.scanned = true;
  return removed;
}

}  // namespace vgpu::cache
