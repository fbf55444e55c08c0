// SPDX-License-Identifier: Apache-2.0
// mpi/src/mpi.cpp — device assignment and the job's one warm cache (docs/scale-out.md, "Across ranks").
//
// The warm-up protocol, all on a duplicate of the caller's communicator, every wait bounded:
//   1. every rank contributes (hash of host name + cache directory, flags): MPI_Iallgather;
//      ranks with the same hash form a group, its lowest rank is the group's leader;
//   2. directory: each leader compiles and calibrates the items; bundle: only rank 0 does, exports a
//      cache bundle and MPI_Ibcasts it (header, then bytes) on a communicator of the leaders only
//      (MPI_Comm_split); each other leader imports it;
//   3. each leader sends its outcome (ok, or its error text) to its group's members (MPI_Isend);
//      a member waits for it (MPI_Irecv), then runs the same items, which now load from the cache;
//   4. MPI_Iallreduce sums source_compiles and calibrations over the job.
#include "vgpu/mpi.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <random>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "vgpu/cache_bundle.hpp"
#include "vgpu/backend_list.hpp"
#include "vgpu/error.hpp"
#include "wait.hpp"

namespace vgpu::mpi {

using detail::check;
using detail::Clock;

namespace {

// Returns what query (MPI_Comm_rank or MPI_Comm_size) says of comm's ranks on this host.
int on_this_host(MPI_Comm comm, int (*query)(MPI_Comm, int*)) {
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int value = 0;
  query(node, &value);
  MPI_Comm_free(&node);
  return value;
}

}  // namespace

int local_rank(MPI_Comm comm) { return on_this_host(comm, MPI_Comm_rank); }

int local_size(MPI_Comm comm) { return on_this_host(comm, MPI_Comm_size); }

Device pick_device(Runtime& runtime, MPI_Comm comm) {
  const int local = local_rank(comm);  // collective: every rank calls it, forced or not
  if (!runtime.config().device.empty()) return runtime.default_device();  // VGPU_DEVICE, as given
  // One backend, the first in registry order with a GPU: CUDA, Vulkan and OpenGL each list the
  // same physical GPUs, so round robin over all of them would put two ranks on one GPU. Each
  // backend is probed only when those before it have no GPU.
  for (const std::string& name : backend_names()) {
    std::vector<DeviceInfo> gpus;
    for (const DeviceInfo& d : runtime.backend_devices(parse_backend_kind(name)))
      if (d.type != DeviceType::cpu) gpus.push_back(d);
    if (!gpus.empty()) return runtime.open(gpus[static_cast<std::size_t>(local) % gpus.size()]);
  }
  return runtime.open(std::string(to_string(BackendKind::cpu)) + ":0");  // the fallback every build has
}

std::string WarmUpReport::to_string() const {
  std::ostringstream s;
  s << "leader=" << leader << " groups=" << groups << " compiling_ranks=" << compiling_ranks
    << " source_compiles=" << local.source_compiles << " l2_hits=" << local.l2_hits << " calibrations=" << calibrations
    << " job_source_compiles=" << job_source_compiles << " job_calibrations=" << job_calibrations
    << " bundle_bytes=" << bundle_bytes << " bundle_bytes_received=" << bundle_bytes_received
    << " job_bundle_bytes=" << job_bundle_bytes << " seconds=" << seconds;
  return s.str();
}

namespace {

// FNV-1a 64: the same value on every host (std::hash need not be).
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

constexpr int kTagStatus = 7101, kTagText = 7102;
constexpr std::uint64_t kFlagCacheDisabled = 1;

// Runs the items and the extra work; returns the items that were measured here.
std::uint64_t run_items(Runtime& runtime, const std::vector<WarmUpItem>& items, const WarmUpOptions& options) {
  std::uint64_t calibrations = 0;
  for (const WarmUpItem& item : items)
    if (runtime.explain(item.op, item.shape, item.factory).source == SelectionSource::calibrated) ++calibrations;
  if (options.work) options.work(runtime);
  return calibrations;
}

std::string error_text(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::vector<char> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A unique file in the system's temp directory for a bundle on its way in or out (random, as
// ranks of several jobs may share a node and its temp directory).
std::filesystem::path temp_bundle(int rank) {
  std::random_device random;
  const std::uint64_t tag = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tag));
  return std::filesystem::temp_directory_path() /
         ("vgpu-mpi-bundle-" + std::string(hex) + "-" + std::to_string(rank) + ".vgpubundle");
}

// Broadcasts bytes from root in chunks that fit an int count.
void bcast_bytes(std::vector<char>& bytes, int root, MPI_Comm comm, Clock::time_point deadline,
                 const std::string& what) {
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes.size() - at));
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibcast(bytes.data() + at, n, MPI_BYTE, root, comm, &r), what);
    detail::wait(r, deadline, what);
  }
}

}  // namespace

WarmUpReport warm_up(MPI_Comm user_comm, Runtime& runtime, const std::vector<WarmUpItem>& items,
                     const WarmUpOptions& options) {
  const auto start = Clock::now();
  const auto deadline = start + detail::effective_timeout(options.timeout, runtime);
  detail::CommGuard guard(detail::duplicate(user_comm, deadline, "warm_up"));
  const MPI_Comm comm = guard.get();
  try {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    WarmUpReport report;
    const CounterSnapshot before = runtime.counters();

    // 1. Groups: ranks that share a host and a cache directory share one L2 store.
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int host_len = 0;
    check(MPI_Get_processor_name(host, &host_len), "MPI_Get_processor_name");
    const Config& config = runtime.config();
    const std::string dir = std::filesystem::weakly_canonical(config.cache_dir).string();
    std::array<std::uint64_t, 2> mine{fnv1a(std::string(host, host_len) + "\n" + dir),
                                      config.cache_enabled ? 0 : kFlagCacheDisabled};
    std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Iallgather(mine.data(), 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm, &r),
          "warm_up: MPI_Iallgather");
    detail::wait(r, deadline, "warm_up: exchanging cache directories (MPI_Iallgather)");
    for (int i = 0; i < size; ++i)
      if (all[2 * i + 1] & kFlagCacheDisabled)
        throw Error(ErrorCategory::invalid_argument,
                    "vgpu::mpi::warm_up: rank " + std::to_string(i) +
                        " has its on-disk cache disabled, so nothing can be shared with it.",
                    "unset VGPU_CACHE_DISABLE (or RuntimeOptions::cache_enabled=false) on every rank.");
    int leader = rank;
    std::vector<int> members;
    std::vector<std::uint64_t> keys;
    for (int i = 0; i < size; ++i) {
      if (all[2 * i] == mine[0]) {
        leader = std::min(leader, i);
        if (i != rank) members.push_back(i);
      }
      keys.push_back(all[2 * i]);
    }
    std::sort(keys.begin(), keys.end());
    report.groups = static_cast<int>(std::unique(keys.begin(), keys.end()) - keys.begin());
    report.leader = leader == rank;
    const bool bundle = options.share == WarmUpOptions::Share::bundle;
    report.compiling_ranks = bundle ? 1 : report.groups;

    // 2. The leaders' work. A failure is carried to the others as text, then rethrown here.
    std::exception_ptr failure;
    const bool compiles = bundle ? rank == 0 : report.leader;
    if (compiles) {
      try {
        report.calibrations += run_items(runtime, items, options);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (bundle) {
      // Only the ranks that import the bundle receive it: rank 0 and the other groups' leaders,
      // on a communicator of their own, so the bytes moved grow with the groups (hosts), not the
      // ranks. MPI_Comm_split is blocking, but every rank reaches it straight from the allgather
      // above with no device work between. Header {ok, bytes}; then the bundle, or rank 0's
      // error text; a leader forwards a failure to its members in step 3.
      MPI_Comm leaders_raw = MPI_COMM_NULL;
      const bool receives = report.leader || rank == 0;
      check(MPI_Comm_split(comm, receives ? 0 : MPI_UNDEFINED, rank, &leaders_raw), "warm_up: MPI_Comm_split");
      detail::CommGuard leaders(leaders_raw);
      std::array<std::uint64_t, 2> header{1, 0};
      std::vector<char> bytes;
      if (rank == 0) {
        if (!failure) {
          try {
            const std::filesystem::path file = temp_bundle(rank);
            export_cache_bundle(config.cache_dir, file);
            bytes = read_file(file);
            std::filesystem::remove(file);
          } catch (...) {
            failure = std::current_exception();
          }
        }
        if (failure) {
          const std::string text = error_text(failure);
          bytes.assign(text.begin(), text.end());
          header[0] = 0;
        }
        header[1] = bytes.size();
      }
      if (receives) {
        try {
          // Rank 0 is rank 0 of the leaders' communicator too (split keeps the order).
          check(MPI_Ibcast(header.data(), 2, MPI_UINT64_T, 0, leaders.get(), &r), "warm_up: MPI_Ibcast");
          detail::wait(r, deadline, "warm_up: waiting for rank 0's cache bundle (MPI_Ibcast)");
          bytes.resize(header[1]);
          bcast_bytes(bytes, 0, leaders.get(), deadline, "warm_up: broadcasting the cache bundle (MPI_Ibcast)");
        } catch (const Error& e) {
          if (e.category() == ErrorCategory::timeout) leaders.leak();
          throw;
        }
        report.bundle_bytes = header[0] ? header[1] : 0;
        if (rank != 0 && header[0]) report.bundle_bytes_received = header[1];
      }
      if (receives && header[0] == 0 && rank != 0)
        failure = std::make_exception_ptr(
            Error(ErrorCategory::unavailable,
                  "vgpu::mpi::warm_up: rank 0 failed to warm up the cache: " + std::string(bytes.begin(), bytes.end()),
                  "fix rank 0's error (above), then rerun the job."));
      if (report.leader && rank != 0 && !failure && leader != 0) {
        try {
          const std::filesystem::path file = temp_bundle(rank);
          {
            std::ofstream out(file, std::ios::binary);
            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            if (!out)
              throw Error(ErrorCategory::io, "vgpu::mpi::warm_up: cannot write " + file.string() + ".",
                          "make the temp directory (TMPDIR) writable and give it room for the bundle.");
          }
          std::vector<DeviceFingerprint> local;
          for (const DeviceInfo& d : runtime.devices()) local.push_back(d.fingerprint);
          import_cache_bundle(file, config.cache_dir, local);
          std::filesystem::remove(file);
        } catch (...) {
          failure = std::current_exception();
        }
      }
    }

    // 3. Leaders tell their members; members wait, then warm up from the cache.
    if (report.leader) {
      const std::string text = failure ? error_text(failure) : std::string();
      const std::uint64_t status[2] = {failure ? 0u : 1u, text.size()};
      std::vector<MPI_Request> sends;
      for (int m : members) {
        sends.emplace_back();
        check(MPI_Isend(status, 2, MPI_UINT64_T, m, kTagStatus, comm, &sends.back()), "warm_up: MPI_Isend");
        sends.emplace_back();
        check(MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, m, kTagText, comm, &sends.back()),
              "warm_up: MPI_Isend");
      }
      for (MPI_Request& s : sends) detail::wait(s, deadline, "warm_up: telling the group's ranks (MPI_Isend)");
      if (failure) std::rethrow_exception(failure);
    } else {
      std::uint64_t status[2] = {0, 0};
      check(MPI_Irecv(status, 2, MPI_UINT64_T, leader, kTagStatus, comm, &r), "warm_up: MPI_Irecv");
      detail::wait(r, deadline,
                   "warm_up: waiting for rank " + std::to_string(leader) + " to warm the cache (MPI_Irecv)");
      std::string text(status[1], '\0');
      check(MPI_Irecv(text.data(), static_cast<int>(text.size()), MPI_CHAR, leader, kTagText, comm, &r),
            "warm_up: MPI_Irecv");
      detail::wait(r, deadline, "warm_up: receiving rank " + std::to_string(leader) + "'s outcome (MPI_Irecv)");
      if (status[0] == 0)
        throw Error(ErrorCategory::unavailable,
                    "vgpu::mpi::warm_up: rank " + std::to_string(leader) + " failed to warm up the cache: " + text,
                    "fix rank " + std::to_string(leader) + "'s error (above), then rerun the job.");
    }
    if (!compiles) report.calibrations += run_items(runtime, items, options);

    // 4. Count it over the job.
    report.local = runtime.counters() - before;
    std::uint64_t local_sums[3] = {report.local.source_compiles, report.calibrations, report.bundle_bytes_received};
    std::uint64_t job_sums[3] = {0, 0, 0};
    check(MPI_Iallreduce(local_sums, job_sums, 3, MPI_UINT64_T, MPI_SUM, comm, &r), "warm_up: MPI_Iallreduce");
    detail::wait(r, deadline, "warm_up: summing the counters (MPI_Iallreduce)");
    report.job_source_compiles = job_sums[0];
    report.job_calibrations = job_sums[1];
    report.job_bundle_bytes = job_sums[2];
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report;
  } catch (const Error& e) {
    if (e.category() == ErrorCategory::timeout) guard.leak();  // a pending request still names it
    throw;
  }
}

}  // namespace vgpu::mpi
