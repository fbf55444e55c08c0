// SPDX-License-Identifier: Apache-2.0
// cache/src/disk_store_directory.cpp — walking the L2 directory: the first-use size scan,
// cost-aware eviction, list/verify, remove_invalid and clear. Every walk opens the folders
// without following links and looks at each name with fstatat (no follow) before anything
// else; only regular files are opened, only regular files with entry or temp names deleted.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <limits>
#include <optional>
#include <unordered_set>
#include <vector>

#include "disk_store_impl.hpp"
#include "payload_check.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/log.hpp"

namespace vgpu::cache {
namespace fs = std::filesystem;
using detail::DirState;
using detail::error_text;
using detail::OpenedDir;
using detail::Problem;
using detail::Tree;

namespace {

/// Calls item(kind, dir, name, st, stat_errno) for every name in every usable kind folder of
/// t (st: a look without following, nullptr when that failed with stat_errno; names that
/// vanished meanwhile are skipped), and folder(path, kind, problem, fix) for the root or a kind
/// folder that cannot be used or read (the root reports as kind spirv).
template <class Item, class Folder>
void walk(const Tree& t, Item&& item, Folder&& folder) {
  if (t.root.state == DirState::unusable) {
    folder(t.root.path, EntryKind::spirv, t.root.problem, t.root.fix);
    return;
  }
  for (std::size_t i = 0; i < detail::kKindCount; ++i) {
    const OpenedDir& d = t.kinds[i];
    const EntryKind kind = detail::kAllKinds[i];
    if (d.state == DirState::unusable) folder(d.path, kind, d.problem, d.fix);
    if (d.state != DirState::ok) continue;
    int error = 0;
    const std::vector<std::string> names = d.dir.names(error);
    if (error)
      folder(d.path, kind, "cannot read it: " + error_text(error),
             "let this user read and enter it (chmod u+rx '" + d.path.string() + "')");
    for (const std::string& name : names) {
      platform::FileStatus st;
      const int e = d.dir.status_of(name, st);
      if (e == 0)
        item(kind, d, name, &st, 0);
      else if (e != ENOENT)
        item(kind, d, name, nullptr, e);
    }
  }
}

/// Returns the reason word of a folder problem: "unreadable" for errno texts, else "type".
std::string folder_reason(const std::string& problem) { return problem.starts_with("cannot") ? "unreadable" : "type"; }

/// Describes an unusable folder as list() reports it.
DiskEntryInfo folder_item(const fs::path& path, EntryKind kind, const std::string& problem, const std::string& fix) {
  DiskEntryInfo info;
  info.path = path;
  info.kind = kind;
  info.folder = true;
  info.problem = folder_reason(problem) + ": the folder is " + problem + "; nothing below it is used";
  if (problem.starts_with("cannot")) info.problem = folder_reason(problem) + ": " + problem;
  info.fix = fix;
  return info;
}

/// Describes name from its no-follow look alone (nothing is opened): a non-regular file or a
/// foreign name is invalid and not deletable; a regular file with an entry name is deletable
/// and left valid here (inspect() reads it).
DiskEntryInfo describe(EntryKind kind, const OpenedDir& dir, const std::string& name, const platform::FileStatus* st,
                       int stat_errno) {
  DiskEntryInfo info;
  info.path = dir.path / name;
  info.kind = kind;
  info.key_hex =
      name.ends_with(detail::kEntrySuffix) ? name.substr(0, name.size() - detail::kEntrySuffix.size()) : name;
  const std::string quoted_path = "'" + info.path.string() + "'";
  if (!st) {
    info.problem = "unreadable: cannot look at it: " + error_text(stat_errno);
    info.fix = "let this user enter its folder, or remove it by hand";
    return info;
  }
  if (!st->regular()) {
    info.problem = detail::type_problem(st->type).text();
    info.fix = "remove it by hand (rm -r " + quoted_path + ") if it is not yours";
    return info;
  }
  info.file_bytes = st->size;
  info.mtime_ns = st->mtime_ns;
  if (!detail::is_entry_name(name)) {
    info.problem = "name: the file name is not <32 hex digits>" + std::string(detail::kEntrySuffix);
    info.fix = "move it out of the cache directory, or remove it by hand (rm " + quoted_path + ") if it is not yours";
    return info;
  }
  info.deletable = true;
  info.valid = true;
  return info;
}

/// Describes name as list() reports it: describe(), then, for an entry file, opens it (never
/// blocking, never following) and checks its header (verify: also its payload). Nothing when
/// it vanished meanwhile.
std::optional<DiskEntryInfo> inspect(EntryKind kind, const OpenedDir& dir, const std::string& name,
                                     const platform::FileStatus* st, int stat_errno, bool verify) {
  DiskEntryInfo info = describe(kind, dir, name, st, stat_errno);
  if (!info.valid) return info;
  platform::FileStatus opened;
  Problem why;
  const platform::File f = detail::open_regular_at(dir.dir, name, opened, why);
  if (!f && !why) return std::nullopt;  // deleted since the folder was read
  if (f) {
    info.file_bytes = opened.size;
    info.mtime_ns = opened.mtime_ns;
    std::vector<std::uint8_t> payload;
    const auto header = detail::check_entry(f, info.file_bytes, kind, *KernelKey::from_hex(info.key_hex), nullptr,
                                            verify ? &payload : nullptr, why);
    if (header) {
      info.payload_bytes = header->payload_bytes;
      info.cost_us = header->cost_us;
      info.fingerprint_text = header->fingerprint_text;
      info.label = header->label;
    }
  } else if (why.reason == "type") {  // swapped for a non-file since the look
    info.deletable = false;
    info.fix = "remove it by hand (rm -r '" + info.path.string() + "') if it is not yours";
  }
  info.valid = !why;
  if (why) info.problem = why.text();
  return info;
}

/// A leftover for something vgpu leaves alone on purpose.
DiskLeftover left_alone(DiskEntryInfo info) {
  DiskLeftover l;
  l.why = std::string(info.folder ? "vgpu never follows, empties or deletes a folder it cannot use"
                      : info.problem.starts_with("type")
                          ? "vgpu never opens or deletes anything but a regular file"
                          : "vgpu deletes only its own files (<32 hex digits>.vgc and its temp files)") +
          ". Fix: " + info.fix + ".";
  l.item = std::move(info);
  return l;
}

/// A leftover for a deletion the system refused (errno e) in folder.
DiskLeftover delete_failed(DiskEntryInfo info, const fs::path& folder, int e) {
  DiskLeftover l;
  l.failed = true;
  l.why = "cannot delete it: " + error_text(e) + ". Fix: run this as the owner of '" + folder.string() +
          "' or make that folder writable (chmod u+w), then run it again; or set VGPU_CACHE_DIR to a directory of "
          "your own.";
  l.item = std::move(info);
  return l;
}

/// Deletes name in dir when it is still the regular file st describes; returns 0 or errno
/// (ENOENT when it is gone or replaced meanwhile).
int unlink_if_same(const OpenedDir& dir, const std::string& name, const platform::FileStatus& st) {
  platform::FileStatus now;
  if (dir.dir.status_of(name, now) != 0 || !now.regular() || !platform::same_file(now, st)) return ENOENT;
  return dir.dir.remove(name);
}

}  // namespace

Tree DiskStore::Impl::open_tree() const {
  Tree t;
  t.root = open_root(false);
  for (std::size_t i = 0; i < detail::kKindCount; ++i) t.kinds[i] = open_kind(t.root, detail::kAllKinds[i], false);
  return t;
}

void DiskStore::Impl::ensure_scanned() {
  {
    std::lock_guard lock(mutex);
    if (scanned) return;
  }
  const Tree t = open_tree();
  std::unordered_map<std::string, std::uint64_t> found;
  walk(
      t,
      [&](EntryKind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int) {
        if (st && st->regular() && detail::is_entry_name(name)) found.emplace((d.path / name).string(), st->size);
      },
      [](auto&&...) {});
  std::lock_guard lock(mutex);
  if (scanned) return;
  for (const auto& [path, bytes] : found) account_locked(path, bytes);
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

bool DiskStore::Impl::retry_after_full(int e, std::uint64_t bytes, bool& made_room) {
  if (!platform::is_disk_full(e)) return false;
  {
    std::lock_guard lock(mutex);
    if (made_room) full_gave_up = true;  // evicting made room, and still no space: it goes elsewhere
    if (full_gave_up) return false;
  }
  made_room = true;
  const std::uint64_t evictions_before = stats_evictions();
  const std::uint64_t freed = evict_pass(bytes);
  log(LogLevel::info, "kernel cache: " + root.string() + " is on a full disk (" + error_text(e) + "); evicted " +
                          std::to_string(stats_evictions() - evictions_before) + " older entries (" +
                          std::to_string(freed) + " bytes) to make room for a " + std::to_string(bytes) +
                          "-byte entry, writing it again");
  return freed > 0;
}

std::uint64_t DiskStore::Impl::stats_evictions() const {
  std::lock_guard lock(mutex);
  return stats.evictions;
}

std::uint64_t DiskStore::Impl::evict_pass(std::uint64_t min_free) {
  struct Candidate {
    std::size_t kind = 0;
    std::string name, path;
    platform::FileStatus st;
    std::uint64_t file_bytes = 0, payload_bytes = 0, cost_us = 0;
    std::int64_t mtime = 0;
  };
  const Tree t = open_tree();
  std::vector<Candidate> all;
  std::uint64_t total = 0;
  walk(
      t,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int) {
        if (!st || !st->regular() || !detail::is_entry_name(name)) return;  // not ours: never counted or evicted
        Candidate c;
        c.kind = detail::kind_index(kind);
        c.name = name;
        c.path = (d.path / name).string();
        c.st = *st;
        Problem why;
        const platform::File f = detail::open_regular_at(d.dir, name, c.st, why);
        if (!f && (!why || why.reason == "type")) return;  // gone, or swapped for a non-file
        c.file_bytes = c.payload_bytes = c.st.size;
        c.mtime = c.st.mtime_ns;
        if (f) {
          if (auto h = detail::read_header(f, c.file_bytes, why)) {
            c.payload_bytes = h->payload_bytes;
            c.cost_us = h->cost_us;
          }  // an unreadable entry keeps cost 0: it goes first
        }
        total += c.file_bytes;
        all.push_back(std::move(c));
      },
      [](auto&&...) {});
  // Over the cap: down to 90% of it. To make room on a full disk: min_free bytes at least.
  std::uint64_t target = total > options.max_bytes ? options.max_bytes - options.max_bytes / 10 : total;
  if (min_free > 0) target = std::min(target, total - std::min(total, min_free));
  std::uint64_t freed = 0;
  std::unordered_set<std::string> removed;
  if (total > target) {
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
      const int e = unlink_if_same(t.kinds[c.kind], c.name, c.st);
      if (e == 0)
        removed.insert(c.path);
      else if (e != ENOENT)
        continue;  // still there: still counts
      total -= c.file_bytes;
      freed += c.file_bytes;  // gone, by us or another process: its space is free either way
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
  return freed;
}

std::vector<DiskEntryInfo> DiskStore::list(bool verify) const {
  std::vector<DiskEntryInfo> out;
  const Tree t = impl_->open_tree();
  walk(
      t,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int stat_errno) {
        if (st && st->regular() && detail::is_temp_name(name)) return;  // a write in progress
        if (auto info = inspect(kind, d, name, st, stat_errno, verify)) out.push_back(std::move(*info));
      },
      [&](const fs::path& path, EntryKind kind, const std::string& problem, const std::string& fix) {
        out.push_back(folder_item(path, kind, problem, fix));
      });
  std::sort(out.begin(), out.end(), [](const DiskEntryInfo& a, const DiskEntryInfo& b) { return a.path < b.path; });
  return out;
}

namespace {

/// Deletes the temp file name when it is older than max_age_s; a refusal goes to left.
void remove_if_stale(const OpenedDir& d, EntryKind kind, const std::string& name, const platform::FileStatus& st,
                     std::int64_t max_age_s, std::vector<DiskLeftover>& left) {
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (now_s - st.mtime_ns / 1000000000 <= max_age_s) return;  // maybe in progress
  const int e = unlink_if_same(d, name, st);
  if (e != 0 && e != ENOENT) left.push_back(delete_failed(describe(kind, d, name, &st, 0), d.path, e));
}

/// Walks t deleting what choose picks. A temp file older than stale_age_s goes (a younger one
/// may be a write in progress); for every other entry choose returns its description when it
/// is to go (nullopt keeps it), and deleted(info) runs once it went. What may not, or could
/// not, be deleted goes to left, as do the folders that could not be read. Returns how many
/// entries went.
template <class Choose, class Deleted>
std::uint64_t delete_walk(const Tree& t, std::int64_t stale_age_s, std::vector<DiskLeftover>& left, Choose&& choose,
                          Deleted&& deleted) {
  std::uint64_t removed = 0;
  walk(
      t,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int stat_errno) {
        if (st && st->regular() && detail::is_temp_name(name))
          return remove_if_stale(d, kind, name, *st, stale_age_s, left);
        std::optional<DiskEntryInfo> info = choose(kind, d, name, st, stat_errno);
        if (!info) return;
        if (!info->deletable) return left.push_back(left_alone(std::move(*info)));
        const int e = unlink_if_same(d, name, *st);
        if (e == ENOENT) return;  // gone or replaced meanwhile
        if (e != 0) return left.push_back(delete_failed(std::move(*info), d.path, e));
        ++removed;
        deleted(*info);
      },
      [&](const fs::path& path, EntryKind kind, const std::string& problem, const std::string& fix) {
        left.push_back(left_alone(folder_item(path, kind, problem, fix)));
      });
  return removed;
}

}  // namespace

std::uint64_t DiskStore::remove_invalid(std::vector<DiskLeftover>* left_out) {
  Impl& s = *impl_;
  std::vector<DiskLeftover> left;
  const std::uint64_t removed = delete_walk(
      s.open_tree(), 600, left,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int stat_errno) {
        auto info = inspect(kind, d, name, st, stat_errno, true);
        return info && !info->valid ? info : std::nullopt;
      },
      [&](const DiskEntryInfo& info) {
        std::lock_guard lock(s.mutex);
        ++s.stats.rejected[info.problem.substr(0, info.problem.find(':'))];
        s.forget_locked(info.path.string());
      });
  if (left_out) *left_out = std::move(left);
  return removed;
}

std::uint64_t DiskStore::remove_matching(bool verify, const std::function<bool(const DiskEntryInfo&)>& pick,
                                         std::vector<DiskLeftover>* left_out) {
  Impl& s = *impl_;
  std::vector<DiskLeftover> left;
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();  // a temp file names no device
  const std::uint64_t removed = delete_walk(
      s.open_tree(), kNever, left,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int stat_errno) {
        auto info = inspect(kind, d, name, st, stat_errno, verify);
        return info && info->deletable && pick(*info) ? info : std::nullopt;
      },
      [&](const DiskEntryInfo& info) {
        std::lock_guard lock(s.mutex);
        if (!info.valid) ++s.stats.rejected[info.problem.substr(0, info.problem.find(':'))];
        s.forget_locked(info.path.string());
      });
  if (left_out) *left_out = std::move(left);
  return removed;
}

std::uint64_t DiskStore::clear(std::vector<DiskLeftover>* left_out) { return clear_matching(nullptr, left_out); }

std::uint64_t DiskStore::clear_kind(EntryKind only, std::vector<DiskLeftover>* left_out) {
  return clear_matching(&only, left_out);
}

std::uint64_t DiskStore::clear_matching(const EntryKind* only, std::vector<DiskLeftover>* left_out) {
  Impl& s = *impl_;
  std::vector<DiskLeftover> left;
  const std::uint64_t removed = delete_walk(
      s.open_tree(), 60, left,
      [&](EntryKind kind, const OpenedDir& d, const std::string& name, const platform::FileStatus* st, int stat_errno) {
        if (only && kind != *only) return std::optional<DiskEntryInfo>();  // another kind: kept, not reported
        return std::optional<DiskEntryInfo>(describe(kind, d, name, st, stat_errno));  // nothing is opened
      },
      [](const DiskEntryInfo&) {});
  {
    std::lock_guard lock(s.mutex);
    s.bytes_of.clear();
    s.total_bytes = 0;
    s.scanned = false;  // what could not be deleted is counted again by the next store
  }
  if (left_out) *left_out = std::move(left);
  return removed;
}

}  // namespace vgpu::cache
