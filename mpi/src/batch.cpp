// SPDX-License-Identifier: Apache-2.0
// mpi/src/batch.cpp — vgpu::mpi::call_batch and matmul_batch: a batch of independent calls of
// one built-in op at one shape over the ranks of a communicator, as a thin layer over MPI
// collectives, readable in one file:
//
//   0. every rank shares its root and split; any disagreement fails on every rank (MPI_Iallgather)
//   1. the root checks its inputs and broadcasts {ok, count, hash of op and shape}  (MPI_Ibcast)
//   2. every rank checks op and shape (and that they match the root's), looks up its device's
//      speed for them, and all share {bad, speed}                                  (MPI_Iallgather)
//   3. counts: even, or split_by_weight of the speeds — every rank computes the same counts
//      from the same gathered values; each input tensor goes out in those counts  (MPI_Iscatterv)
//   4. each rank runs its share through its KernelDatabase (or Cache, for matmul_batch; a Cache
//      over a DeviceSet spreads the share over its devices, and its speed is their sum)
//   5. every rank says whether its share worked                                  (MPI_Iallreduce, MAXLOC)
//   6. the root collects each output tensor                                      (MPI_Igatherv)
//
// Every wait has a deadline (BatchOptions::timeout, else the device's limit, VGPU_TIMEOUT_MS): a
// rank that died or hangs makes the others throw vgpu::Error (timeout), never wait forever.
#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <memory>

#include "vgpu/device_set.hpp"
#include "vgpu/error.hpp"
#include "vgpu/mpi.hpp"
#include "vgpu/ops.hpp"
#include "wait.hpp"

namespace vgpu::mpi {

namespace {

// One argument tensor of a built-in op (vgpu/ops.hpp), in the plan's declaration order.
struct Tensor {
  Shape shape;
  bool in = false;   // uploaded: read or read_write
  bool out = false;  // read back: write or read_write
  std::uint64_t elements() const { return element_count(shape); }
};

// The argument tensors of op at shape; throws invalid_argument for an op or shape that is not
// a built-in one (ops::check_shape names the expected form).
std::vector<Tensor> tensors_of(const std::string& op, const Shape& s) {
  ops::check_shape(op, s);
  if (op == "matmul") return {{{s[0], s[1]}, true, false}, {{s[1], s[2]}, true, false}, {{s[0], s[2]}, false, true}};
  if (op == "add" || op == "mul") return {{{s[0]}, true, false}, {{s[0]}, true, false}, {{s[0]}, false, true}};
  if (op == "axpy") return {{{1}, true, false}, {{s[0]}, true, false}, {{s[0]}, true, true}};
  if (op == "reduce_sum") return {{{s[0]}, true, false}, {{1}, false, true}};
  if (op == "softmax_rows") return {{{s[0], s[1]}, true, false}, {{s[0], s[1]}, false, true}};
  throw Error(ErrorCategory::invalid_argument, "vgpu::mpi: the op '" + op + "' has no batch over ranks.",
              "use one of matmul, add, mul, axpy, reduce_sum, softmax_rows (vgpu/ops.hpp).");
}

// FNV-1a 64 of op and shape: the ranks compare theirs with the root's.
std::uint64_t hash_of(const std::string& op, const Shape& shape) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t byte) { h = (h ^ byte) * 1099511628211ull; };
  for (unsigned char c : op) mix(c);
  for (std::uint64_t d : shape)
    for (int i = 0; i < 8; ++i) mix((d >> (8 * i)) & 0xff);
  return h;
}

// An MPI datatype of n contiguous floats, freed on scope exit; one tensor of one entry is one
// element, so the counts stay small ints however large the tensors are.
struct TensorType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  explicit TensorType(std::uint64_t floats) {
    detail::check(MPI_Type_contiguous(static_cast<int>(floats), MPI_FLOAT, &type), "MPI_Type_contiguous");
    detail::check(MPI_Type_commit(&type), "MPI_Type_commit");
  }
  ~TensorType() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
  TensorType(const TensorType&) = delete;
  TensorType& operator=(const TensorType&) = delete;
};

// Where a rank's share runs: its devices (for the speed lookup), its runtime and its deadline's
// fallback; run(shape, entries, base) computes entries packed entries, base[t] pointing at
// tensor t's first float.
struct Runner {
  std::string name;                  // "call_batch", "matmul_batch" (for messages)
  Runtime* runtime = nullptr;        // the selection's timings
  Device device;                     // the deadline's fallback; empty: the runtime's
  std::vector<std::string> devices;  // the ids whose speeds add up (a Cache's set); empty: the
                                     // device, else the one the selection picks
  std::function<void(const Shape&, int, const std::vector<float*>&)> run;
};

// This rank's speed for op at shape: 1 / the selection's time of one call on its device (over
// a DeviceSet, the sum over its devices: they share the rank's entries in proportion), or 0
// when it has none; it never throws (a rank without a time weighs the median).
double measured_speed(const Runner& where, const std::string& op, const Shape& shape, const BatchOptions& options) {
  if (options.speed > 0) return options.speed;
  if (options.speed < 0) return 0;
  try {
    const Selection s = where.runtime->explain(op, shape);
    std::vector<std::string> ids = where.devices;
    if (ids.empty()) ids.push_back(where.device ? where.device.info().id() : s.device);
    double speed = 0;
    for (const std::string& id : ids)
      for (const SelectionCandidate& c : s.candidates)
        if (c.device == id && c.eligible && !c.demoted && c.seconds > 0) speed += 1.0 / c.seconds;
    return speed;
  } catch (const std::exception&) {
    // No time (a forced device, a failed calibration): the median of the others stands in.
  }
  return 0;
}

// Every rank's share: even, or by the gathered speeds (the same on every rank: the same values
// in the same order through the same arithmetic).
std::vector<int> shares(const std::vector<double>& speeds, int count, bool measured) {
  const auto size = static_cast<int>(speeds.size());
  std::vector<double> w(speeds.size(), 1.0);
  if (measured) {
    std::vector<double> known;
    for (double v : speeds)
      if (v > 0) known.push_back(v);
    if (!known.empty()) {
      std::sort(known.begin(), known.end());
      const std::size_t h = known.size() / 2;
      const double median = known.size() % 2 ? known[h] : (known[h - 1] + known[h]) / 2;
      for (int i = 0; i < size; ++i) w[i] = speeds[i] > 0 ? speeds[i] : median;
    }
  }
  std::vector<int> counts(speeds.size());
  if (!measured) {
    for (int i = 0; i < size; ++i) counts[i] = count / size + (i < count % size ? 1 : 0);
    return counts;
  }
  const std::vector<std::uint32_t> parts = split_by_weight(w, static_cast<std::uint32_t>(count));
  std::transform(parts.begin(), parts.end(), counts.begin(), [](std::uint32_t p) { return static_cast<int>(p); });
  return counts;
}

// The protocol above; inputs (one packed buffer per input tensor) are read on the root only;
// root_problem is what the root's caller found wrong with them (empty: nothing); with
// shape_from_root, the other ranks take the root's shape (matmul_batch: only the root has the
// matrices) instead of checking theirs against it.
std::vector<std::vector<float>> run_batch(MPI_Comm user_comm, const std::string& op, Shape shape, bool shape_from_root,
                                          const std::vector<const std::vector<float>*>& inputs,
                                          const std::string& root_problem, const Runner& where,
                                          const BatchOptions& options) {
  const std::string name = where.name;
  const std::chrono::milliseconds fallback = where.device ? where.device.timeout() : where.runtime->config().timeout;
  const auto deadline = detail::Clock::now() + detail::effective_timeout(options.timeout, fallback);
  detail::CommGuard guard(detail::duplicate(user_comm, deadline, name));
  const MPI_Comm comm = guard.get();
  try {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request r = MPI_REQUEST_NULL;

    // 0. Every rank's root and split, before any collective that names a root: ranks that
    // disagree would pair one rank's MPI_Ibcast with another's (some would return, the others
    // wait out the deadline and blame a rank for not answering). Any mismatch, or a root out of
    // range, fails on every rank alike.
    const std::array<int, 2> mine_agree{options.root, static_cast<int>(options.split)};
    std::vector<int> agree(2 * static_cast<std::size_t>(size));
    detail::check(MPI_Iallgather(mine_agree.data(), 2, MPI_INT, agree.data(), 2, MPI_INT, comm, &r),
                  name + ": MPI_Iallgather");
    detail::wait(r, deadline, name + ": agreeing on the root and split (MPI_Iallgather)");
    for (int field = 0; field < 2; ++field) {
      bool same = true;
      for (int i = 1; i < size; ++i) same = same && agree[2 * i + field] == agree[field];
      if (same) continue;
      const char* what = field == 0 ? "BatchOptions::root" : "BatchOptions::split";
      std::string per_rank;
      for (int i = 0; i < size; ++i) {
        const int v = agree[2 * i + field];
        const std::string value = field == 0                                         ? std::to_string(v)
                                  : v == static_cast<int>(BatchOptions::Split::even) ? "even"
                                                                                     : "measured";
        per_rank += (i ? ", rank " : "rank ") + std::to_string(i) + ": " + value;
      }
      throw Error(ErrorCategory::invalid_argument,
                  "vgpu::mpi::" + name + ": the ranks pass different " + what + " (" + per_rank +
                      "); no rank sent or received any data.",
                  std::string("pass the same ") + what + " on every rank of the communicator.");
    }
    const int root = options.root;
    if (root < 0 || root >= size)
      throw Error(ErrorCategory::invalid_argument,
                  "vgpu::mpi::" + name + ": root " + std::to_string(root) + " is not a rank of a communicator of " +
                      std::to_string(size) + ".",
                  "pass BatchOptions::root between 0 and the communicator's size - 1, the same on every rank.");

    // Each rank's own checks: op and shape (every rank has them), then the root's inputs.
    std::string problem;
    std::vector<Tensor> tensors;
    auto check_shape = [&] {
      try {
        tensors = tensors_of(op, shape);
        for (const Tensor& t : tensors)
          if (t.elements() > static_cast<std::uint64_t>(INT32_MAX))
            problem = "one entry's tensor of " + std::to_string(t.elements()) + " floats is more than MPI's int count";
      } catch (const Error& e) {
        problem = e.problem();  // e.g. "unknown op 'x'." and its own hint, without the final dots
        std::string fix = e.fix();
        if (!problem.empty() && problem.back() == '.') problem.pop_back();
        if (!fix.empty() && fix.back() == '.') fix.pop_back();
        problem += " (" + fix + ")";
      }
    };
    if (rank == root || !shape_from_root) check_shape();
    std::uint64_t count = 0;
    if (rank == root && problem.empty()) problem = root_problem;
    if (rank == root && problem.empty()) {
      std::vector<const Tensor*> in;
      for (const Tensor& t : tensors)
        if (t.in) in.push_back(&t);
      if (inputs.size() != in.size())
        problem =
            "got " + std::to_string(inputs.size()) + " input buffers; " + op + " takes " + std::to_string(in.size());
      else {
        count = inputs[0]->size() / in[0]->elements();
        for (std::size_t i = 0; i < in.size() && problem.empty(); ++i)
          if (count == 0 || inputs[i]->size() != count * in[i]->elements())
            problem = "input " + std::to_string(i) + " holds " + std::to_string(inputs[i]->size()) +
                      " floats, not a positive count (" + std::to_string(count) + ") of " +
                      std::to_string(in[i]->elements()) + "-float entries";
        if (problem.empty() && count > static_cast<std::uint64_t>(INT32_MAX))
          problem = "the batch has " + std::to_string(count) + " entries, more than MPI's int count";
      }
    }

    // 1. The root's verdict, count and shape (up to 3 dimensions); everyone learns them.
    std::array<std::uint64_t, 7> header{problem.empty() ? 1u : 0u, count, hash_of(op, shape), shape.size(), 0, 0, 0};
    for (std::size_t d = 0; d < shape.size() && d < 3; ++d) header[4 + d] = shape[d];
    detail::check(MPI_Ibcast(header.data(), 7, MPI_UINT64_T, root, comm, &r), name + ": MPI_Ibcast");
    detail::wait(r, deadline, name + ": waiting for the root's batch (MPI_Ibcast)");
    if (rank != root && shape_from_root && header[0] == 1) {
      shape.assign(header.begin() + 4,
                   header.begin() + 4 + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(header[3], 3)));
      check_shape();
    } else if (rank != root && problem.empty() && header[2] != hash_of(op, shape))
      problem = "this rank's op and shape differ from the root's";

    // 2. Every rank's {bad, speed}, so that all throw together or agree on the counts.
    const bool measured = options.split == BatchOptions::Split::measured;
    const bool ok_here = problem.empty() && header[0] == 1;
    std::array<double, 2> mine{problem.empty() ? 0.0 : 1.0,
                               ok_here && measured ? measured_speed(where, op, shape, options) : 0.0};
    std::vector<double> all(2 * static_cast<std::size_t>(size));
    detail::check(MPI_Iallgather(mine.data(), 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm, &r),
                  name + ": MPI_Iallgather");
    detail::wait(r, deadline, name + ": exchanging the ranks' checks and speeds (MPI_Iallgather)");
    for (int i = 0; i < size; ++i)
      if (all[2 * i] != 0 || header[0] == 0) {
        const int bad = header[0] == 0 ? root : i;
        throw Error(ErrorCategory::invalid_argument,
                    "vgpu::mpi::" + name + ": " +
                        (!problem.empty()
                             ? problem
                             : "rank " + std::to_string(bad) + "'s batch or arguments are invalid (see its error)") +
                        ".",
                    "pass the root one buffer per input tensor, each a whole number of entries of the op's shape, and "
                    "the same op, shape and options on every rank.");
      }
    count = header[1];

    // 3. Shares, then the inputs out.
    std::vector<double> speeds(size);
    for (int i = 0; i < size; ++i) speeds[i] = all[2 * i + 1];
    const std::vector<int> counts = shares(speeds, static_cast<int>(count), measured);
    std::vector<int> displs(size, 0);
    for (int i = 1; i < size; ++i) displs[i] = displs[i - 1] + counts[i - 1];
    if (options.report)
      *options.report = BatchReport{counts, measured ? speeds : std::vector<double>(size, 0.0), measured};
    const int share = counts[rank];
    std::vector<std::vector<float>> mine_t(tensors.size());  // this rank's share, per tensor
    std::vector<std::unique_ptr<TensorType>> types;
    std::vector<MPI_Request> scatter;
    scatter.reserve(tensors.size());
    for (std::size_t t = 0, in = 0; t < tensors.size(); ++t) {
      types.push_back(std::make_unique<TensorType>(tensors[t].elements()));
      mine_t[t].resize(tensors[t].elements() * share);
      if (!tensors[t].in) continue;
      const float* send = rank == root ? inputs[in]->data() : nullptr;
      ++in;
      scatter.emplace_back(MPI_REQUEST_NULL);
      detail::check(MPI_Iscatterv(send, counts.data(), displs.data(), types[t]->type, mine_t[t].data(), share,
                                  types[t]->type, root, comm, &scatter.back()),
                    name + ": MPI_Iscatterv");
    }
    for (MPI_Request& s : scatter) detail::wait(s, deadline, name + ": scattering the inputs (MPI_Iscatterv)");

    // 4. This rank's share.
    std::exception_ptr failure;
    try {
      std::vector<float*> base(tensors.size());
      for (std::size_t t = 0; t < tensors.size(); ++t) base[t] = mine_t[t].data();
      if (share > 0) where.run(shape, share, base);
    } catch (...) {
      failure = std::current_exception();
    }

    // 5. Did every share work? {failed, rank} with MAXLOC names a failed rank.
    int flag[2] = {failure ? 1 : 0, rank}, worst[2] = {0, 0};
    detail::check(MPI_Iallreduce(flag, worst, 1, MPI_2INT, MPI_MAXLOC, comm, &r), name + ": MPI_Iallreduce");
    detail::wait(r, deadline, name + ": waiting for every rank's share (MPI_Iallreduce)");
    if (failure) std::rethrow_exception(failure);
    if (worst[0] != 0)
      throw Error(ErrorCategory::unavailable,
                  "vgpu::mpi::" + name + ": rank " + std::to_string(worst[1]) + "'s share of the batch failed.",
                  "see rank " + std::to_string(worst[1]) +
                      "'s error; rerun with that rank's device fixed or excluded "
                      "(VGPU_DEVICE, VGPU_BACKEND).");

    // 6. The outputs to the root.
    std::vector<std::vector<float>> outputs;
    std::vector<MPI_Request> gather;
    outputs.reserve(tensors.size());
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      if (!tensors[t].out) continue;
      outputs.emplace_back(rank == root ? tensors[t].elements() * count : 0);
      gather.emplace_back(MPI_REQUEST_NULL);
      detail::check(MPI_Igatherv(mine_t[t].data(), share, types[t]->type, outputs.back().data(), counts.data(),
                                 displs.data(), types[t]->type, root, comm, &gather.back()),
                    name + ": MPI_Igatherv");
    }
    for (MPI_Request& g : gather) detail::wait(g, deadline, name + ": gathering the outputs (MPI_Igatherv)");
    if (rank != root) outputs.clear();
    return outputs;
  } catch (const Error& e) {
    if (e.category() == ErrorCategory::timeout) guard.leak();  // a pending request still names it
    throw;
  }
}

}  // namespace

std::vector<std::vector<float>> call_batch(MPI_Comm comm, KernelDatabase& db, const std::string& op, const Shape& shape,
                                           const std::vector<std::vector<float>>& inputs, const BatchOptions& options) {
  Runner where;
  where.name = "call_batch";
  where.runtime = options.runtime ? options.runtime : &Runtime::global();
  if (!db.selects()) where.device = db.device();
  std::vector<Tensor> tensors;
  try {
    tensors = tensors_of(op, shape);
  } catch (const Error&) {
    // run_batch reports it on every rank.
  }
  where.run = [&](const Shape&, int entries, const std::vector<float*>& base) {
    for (int i = 0; i < entries; ++i) {  // one after another through the persistent kernel
      std::vector<TensorArg> args;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        float* at = base[t] + tensors[t].elements() * i;
        args.push_back(tensors[t].out ? TensorArg(at, tensors[t].shape)
                                      : TensorArg(static_cast<const float*>(at), tensors[t].shape));
      }
      db.call(op, shape, args);
    }
  };
  std::vector<const std::vector<float>*> in;
  for (const std::vector<float>& x : inputs) in.push_back(&x);
  return run_batch(comm, op, shape, false, in, "", where, options);
}

std::vector<Matrix> matmul_batch(MPI_Comm comm, Cache& cache, const std::vector<Matrix>& a,
                                 const std::vector<Matrix>& b, const BatchOptions& options) {
  // The root's shape check (the others learn the verdict in step 1), then packed A and B.
  Shape shape{1, 1, 1};
  std::string problem;
  std::vector<float> all_a, all_b;
  if (a.empty() || a.size() != b.size())
    problem = "the batch has " + std::to_string(a.size()) + " A and " + std::to_string(b.size()) + " B matrices";
  else {
    shape = {a[0].rows, a[0].cols, b[0].cols};
    for (std::size_t i = 0; i < a.size() && problem.empty(); ++i)
      if (a[i].rows != shape[0] || a[i].cols != shape[1] || b[i].rows != shape[1] || b[i].cols != shape[2] ||
          shape[0] * shape[1] * shape[2] == 0)
        problem = "matmul " + std::to_string(i) + " is " + std::to_string(a[i].rows) + "x" + std::to_string(a[i].cols) +
                  " times " + std::to_string(b[i].rows) + "x" + std::to_string(b[i].cols) +
                  ", not the first's non-empty shape";
    for (std::size_t i = 0; i < a.size() && problem.empty(); ++i) {
      all_a.insert(all_a.end(), a[i].data.begin(), a[i].data.end());
      all_b.insert(all_b.end(), b[i].data.begin(), b[i].data.end());
    }
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool is_root = rank == options.root;  // only the root's batch counts; the others take its shape
  Runner where;
  where.name = "matmul_batch";
  where.runtime = options.runtime   ? options.runtime
                  : cache.devices() ? &cache.devices()->runtime()
                                    : &Runtime::global();
  where.device = cache.device();
  if (cache.devices()) where.devices = cache.devices()->ids();
  where.run = [&](const Shape& s, int entries, const std::vector<float*>& p) {
    const auto m = static_cast<std::uint32_t>(s[0]), k = static_cast<std::uint32_t>(s[1]),
               n = static_cast<std::uint32_t>(s[2]);
    if (!cache.devices()) {
      for (int i = 0; i < entries; ++i)
        cache.matmul(p[0] + std::size_t{m} * k * i, p[1] + std::size_t{k} * n * i, p[2] + std::size_t{m} * n * i, m, k,
                     n);
      return;
    }
    // Over a DeviceSet: the rank's share is itself spread over its devices (Cache::matmul_batch).
    std::vector<std::pair<Matrix, Matrix>> pairs(entries);
    for (int i = 0; i < entries; ++i) {
      pairs[i].first = Matrix(m, k), pairs[i].second = Matrix(k, n);
      std::copy_n(p[0] + std::size_t{m} * k * i, std::size_t{m} * k, pairs[i].first.data.begin());
      std::copy_n(p[1] + std::size_t{k} * n * i, std::size_t{k} * n, pairs[i].second.data.begin());
    }
    const std::vector<Matrix> c = cache.matmul_batch(pairs);
    for (int i = 0; i < entries; ++i) std::copy(c[i].data.begin(), c[i].data.end(), p[2] + std::size_t{m} * n * i);
  };
  std::vector<std::vector<float>> c =
      run_batch(comm, "matmul", shape, true, {&all_a, &all_b}, is_root ? problem : "", where, options);
  std::vector<Matrix> out;
  if (!is_root) return out;
  const auto m = static_cast<std::uint32_t>(shape[0]), n = static_cast<std::uint32_t>(shape[2]);
  out.reserve(c[0].size() / (std::size_t{m} * n));
  for (std::size_t i = 0; i < c[0].size() / (std::size_t{m} * n); ++i) {
    Matrix x(m, n);
    std::copy_n(c[0].begin() + static_cast<std::ptrdiff_t>(i * m * n), std::size_t{m} * n, x.data.begin());
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace vgpu::mpi
