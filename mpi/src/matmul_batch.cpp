// SPDX-License-Identifier: Apache-2.0
// mpi/src/matmul_batch.cpp — vgpu::mpi::matmul_batch: a batch of same-shape matmuls over the
// ranks of a communicator, as a thin layer over MPI collectives, readable in one file:
//
//   1. the root checks the batch and broadcasts {ok, count, m, k, n}  (MPI_Ibcast)
//   2. shares: rank r gets count/size matmuls, the first count%size ranks one more; A and B
//      go out as whole matrices (an MPI type of m·k or k·n floats)      (MPI_Iscatterv × 2)
//   3. each rank runs its share through its vgpu::Cache (any device it chose)
//   4. every rank says whether its share worked                        (MPI_Iallreduce, MAXLOC)
//   5. the root collects C                                             (MPI_Igatherv)
//
// Every wait has a deadline (BatchOptions::timeout, else VGPU_TIMEOUT_MS): a rank that died or
// hangs makes the others throw vgpu::Error (timeout), never wait forever.
#include <algorithm>
#include <array>
#include <exception>

#include "vgpu/error.hpp"
#include "vgpu/mpi.hpp"
#include "wait.hpp"

namespace vgpu::mpi {

namespace {

// An MPI datatype of n contiguous floats, freed on scope exit; one matrix is one element, so the
// counts stay small ints however large the matrices are.
struct MatrixType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  explicit MatrixType(std::uint64_t floats) {
    if (floats > static_cast<std::uint64_t>(INT32_MAX))
      throw Error(ErrorCategory::invalid_argument,
                  "vgpu::mpi::matmul_batch: one matrix has " + std::to_string(floats) + " elements, more than MPI's int count.",
                  "split the matmul (fewer rows per matrix) before spreading the batch.");
    detail::check(MPI_Type_contiguous(static_cast<int>(floats), MPI_FLOAT, &type), "MPI_Type_contiguous");
    detail::check(MPI_Type_commit(&type), "MPI_Type_commit");
  }
  ~MatrixType() {
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
  }
  MatrixType(const MatrixType&) = delete;
  MatrixType& operator=(const MatrixType&) = delete;
};

}  // namespace

std::vector<Matrix> matmul_batch(MPI_Comm user_comm, Cache& cache, const std::vector<Matrix>& a,
                                 const std::vector<Matrix>& b, const BatchOptions& options) {
  const auto deadline =
      detail::Clock::now() + detail::effective_timeout(options.timeout, Runtime::global());
  detail::CommGuard guard(detail::duplicate(user_comm, deadline, "matmul_batch"));
  const MPI_Comm comm = guard.get();
  try {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int root = options.root;
    if (root < 0 || root >= size)
      throw Error(ErrorCategory::invalid_argument,
                  "vgpu::mpi::matmul_batch: root " + std::to_string(root) + " is not a rank of a communicator of " +
                      std::to_string(size) + ".",
                  "pass BatchOptions::root between 0 and the communicator's size - 1, the same on every rank.");
    MPI_Request r = MPI_REQUEST_NULL;

    // 1. The root checks the batch; everyone learns its shape (or that it was bad).
    std::array<std::uint64_t, 5> shape{1, a.size(), 0, 0, 0};  // ok, count, m, k, n
    std::string problem;
    if (rank == root) {
      if (a.empty() || a.size() != b.size())
        problem = "the batch has " + std::to_string(a.size()) + " A and " + std::to_string(b.size()) + " B matrices";
      else {
        shape[2] = a[0].rows, shape[3] = a[0].cols, shape[4] = b[0].cols;
        for (std::size_t i = 0; i < a.size() && problem.empty(); ++i)
          if (a[i].rows != shape[2] || a[i].cols != shape[3] || b[i].rows != shape[3] || b[i].cols != shape[4] ||
              shape[2] * shape[3] * shape[4] == 0)
            problem = "matmul " + std::to_string(i) + " is " + std::to_string(a[i].rows) + "x" +
                      std::to_string(a[i].cols) + " times " + std::to_string(b[i].rows) + "x" +
                      std::to_string(b[i].cols) + ", not the first's non-empty shape";
      }
      if (!problem.empty()) shape[0] = 0;
    }
    detail::check(MPI_Ibcast(shape.data(), 5, MPI_UINT64_T, root, comm, &r), "matmul_batch: MPI_Ibcast");
    detail::wait(r, deadline, "matmul_batch: waiting for the root's batch shape (MPI_Ibcast)");
    if (shape[0] == 0)
      throw Error(ErrorCategory::invalid_argument,
                  "vgpu::mpi::matmul_batch: " + (problem.empty() ? "the root's batch is malformed" : problem) + ".",
                  "pass the root equally many A and B matrices, all of one shape with A.cols == B.rows.");
    const auto count = static_cast<int>(shape[1]);
    const auto m = static_cast<std::uint32_t>(shape[2]), k = static_cast<std::uint32_t>(shape[3]),
               n = static_cast<std::uint32_t>(shape[4]);

    // 2. Even shares (the ranks' devices are assumed alike; each rank is one device).
    std::vector<int> counts(size), displs(size);
    for (int i = 0; i < size; ++i) {
      counts[i] = count / size + (i < count % size ? 1 : 0);
      displs[i] = i == 0 ? 0 : displs[i - 1] + counts[i - 1];
    }
    const int share = counts[rank];
    const MatrixType ta(std::uint64_t{m} * k), tb(std::uint64_t{k} * n), tc(std::uint64_t{m} * n);
    std::vector<float> all_a, all_b;  // the root's batch, packed
    if (rank == root) {
      all_a.reserve(std::size_t{m} * k * count);
      all_b.reserve(std::size_t{k} * n * count);
      for (int i = 0; i < count; ++i) {
        all_a.insert(all_a.end(), a[i].data.begin(), a[i].data.end());
        all_b.insert(all_b.end(), b[i].data.begin(), b[i].data.end());
      }
    }
    std::vector<float> my_a(std::size_t{m} * k * share), my_b(std::size_t{k} * n * share), my_c(std::size_t{m} * n * share);
    std::array<MPI_Request, 2> scatter{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    detail::check(MPI_Iscatterv(all_a.data(), counts.data(), displs.data(), ta.type, my_a.data(), share, ta.type, root,
                                comm, &scatter[0]),
                  "matmul_batch: MPI_Iscatterv");
    detail::check(MPI_Iscatterv(all_b.data(), counts.data(), displs.data(), tb.type, my_b.data(), share, tb.type, root,
                                comm, &scatter[1]),
                  "matmul_batch: MPI_Iscatterv");
    for (MPI_Request& s : scatter) detail::wait(s, deadline, "matmul_batch: scattering A and B (MPI_Iscatterv)");

    // 3. This rank's share.
    std::exception_ptr failure;
    try {
      for (int i = 0; i < share; ++i)
        cache.matmul(my_a.data() + std::size_t{m} * k * i, my_b.data() + std::size_t{k} * n * i,
                     my_c.data() + std::size_t{m} * n * i, m, k, n);
    } catch (...) {
      failure = std::current_exception();
    }

    // 4. Did every share work? {failed, rank} with MAXLOC names a failed rank.
    int mine[2] = {failure ? 1 : 0, rank}, worst[2] = {0, 0};
    detail::check(MPI_Iallreduce(mine, worst, 1, MPI_2INT, MPI_MAXLOC, comm, &r), "matmul_batch: MPI_Iallreduce");
    detail::wait(r, deadline, "matmul_batch: waiting for every rank's share (MPI_Iallreduce)");
    if (failure) std::rethrow_exception(failure);
    if (worst[0] != 0)
      throw Error(ErrorCategory::unavailable,
                  "vgpu::mpi::matmul_batch: rank " + std::to_string(worst[1]) + "'s share of the batch failed.",
                  "see rank " + std::to_string(worst[1]) + "'s error; rerun with that rank's device fixed or excluded "
                  "(VGPU_DEVICE, VGPU_BACKEND).");

    // 5. C to the root.
    std::vector<float> all_c(rank == root ? std::size_t{m} * n * count : 0);
    detail::check(MPI_Igatherv(my_c.data(), share, tc.type, all_c.data(), counts.data(), displs.data(), tc.type, root,
                               comm, &r),
                  "matmul_batch: MPI_Igatherv");
    detail::wait(r, deadline, "matmul_batch: gathering C (MPI_Igatherv)");
    std::vector<Matrix> c;
    if (rank == root) {
      c.reserve(count);
      for (int i = 0; i < count; ++i) {
        Matrix out(m, n);
        std::copy_n(all_c.begin() + static_cast<std::ptrdiff_t>(std::size_t{m} * n * i), std::size_t{m} * n,
                    out.data.begin());
        c.push_back(std::move(out));
      }
    }
    return c;
  } catch (const Error& e) {
    if (e.category() == ErrorCategory::timeout) guard.leak();  // a pending request still names it
    throw;
  }
}

}  // namespace vgpu::mpi
