// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/result_check.cpp — references of a call's outputs, and the comparison with them.
#include "result_check.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "vgpu/tolerance.hpp"

namespace vgpu::detail::check {
namespace {

// The caller-visible tensors of plan, in argument order.
std::vector<const TensorSpec*> visible(const KernelPlan& plan) {
  std::vector<const TensorSpec*> v;
  for (const TensorSpec& t : plan.tensors)
    if (!t.scratch) v.push_back(&t);
  return v;
}

// Element i of argument a (its input data: for a read_write tensor, the value before the call).
double in_at(const TensorArg& a, std::uint64_t i) { return element_value(a.dtype, a.in, i); }
// Element i of argument a's output data (after the call).
double out_at(const TensorArg& a, std::uint64_t i) { return element_value(a.dtype, a.out, i); }

// A deterministic stream (xorshift64) for choosing sampled elements.
struct Stream {
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  std::uint64_t below(std::uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return n ? state % n : 0;
  }
};

// count indices in [0, n): one in each of count equal strata (so a wrong stretch longer than
// n/count cannot be missed), at a random place within it; the first is 0 and the last n − 1
// (edges are where tilings and stride loops go wrong). Every index when count ≥ n.
std::vector<std::uint64_t> strata(std::uint64_t n, std::uint64_t count, Stream& rng) {
  std::vector<std::uint64_t> out;
  if (count >= n) {
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::uint64_t s = 0; s < count; ++s) {
    const std::uint64_t lo = s * n / count, hi = (s + 1) * n / count;
    out.push_back(lo + rng.below(hi - lo));
  }
  out.front() = 0;
  out.back() = n - 1;
  return out;
}

bool shaped(const TensorSpec* t, DType dtype, Access access, std::size_t dims) {
  return t->dtype == dtype && t->access == access && t->shape.size() == dims;
}

// matmul: C[i,j] at sampled elements, one per stratum of C's row-major order (so every stretch
// of rows is sampled, at random columns), each an exact dot product over k.
// float16 and bfloat16 operands (all three of one dtype): the float32 bound, then one rounding
// (tolerance::narrowed); tf32 (matmul_tf32): plus the TF32 rounding of the inputs.
std::optional<Reference> matmul_ref(const std::vector<const TensorSpec*>& t, const CallData& in, bool tf32) {
  if (t.size() != 3) return std::nullopt;
  const DType dtype = t[0]->dtype;
  if ((dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16) || !shaped(t[0], dtype, Access::read, 2) ||
      !shaped(t[1], dtype, Access::read, 2) || !shaped(t[2], dtype, Access::write, 2))
    return std::nullopt;
  const std::uint64_t m = t[0]->shape[0], k = t[0]->shape[1], n = t[1]->shape[1];
  if (t[1]->shape[0] != k || t[2]->shape[0] != m || t[2]->shape[1] != n) return std::nullopt;
  Reference ref;
  Stream rng;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> at;
  for (const std::uint64_t e :
       strata(m * n, std::clamp<std::uint64_t>(kSampleFlops / k, kMinSamples, kMaxSamples), rng))
    at.emplace_back(e / n, e % n);
  for (const auto& [i, j] : at) {
    double dot = 0, abs_dot = 0;
    for (std::uint64_t p = 0; p < k; ++p) {
      const double x = in_at(in.args[0], i * k + p) * in_at(in.args[1], p * n + j);
      dot += x;
      abs_dot += std::abs(x);
    }
    const double bound32 = tolerance::matmul_random(k, abs_dot) + (tf32 ? tolerance::tf32_inputs(abs_dot) : 0.0);
    ref.expected.push_back({2, i * n + j, dot, tolerance::narrowed(dot, bound32, dtype)});
  }
  return ref;
}

// axpy, add, mul: sampled elements, one per stratum.
std::optional<Reference> elementwise_ref(const std::string& op, const std::vector<const TensorSpec*>& t,
                                         const CallData& in) {
  const bool axpy = op == "axpy";
  if (t.size() != 3) return std::nullopt;
  if (axpy ? !(shaped(t[0], DType::f32, Access::read, 1) && t[0]->shape[0] == 1 &&
               shaped(t[1], DType::f32, Access::read, 1) && shaped(t[2], DType::f32, Access::read_write, 1))
           : !(shaped(t[0], DType::f32, Access::read, 1) && shaped(t[1], DType::f32, Access::read, 1) &&
               shaped(t[2], DType::f32, Access::write, 1)))
    return std::nullopt;
  const std::uint64_t n = t[2]->shape[0];
  if (t[1]->shape[0] != n || (!axpy && t[0]->shape[0] != n)) return std::nullopt;
  Reference ref;
  Stream rng;
  for (const std::uint64_t i : strata(n, kMaxSamples, rng)) {
    if (axpy) {
      const double ax = in_at(in.args[0], 0) * in_at(in.args[1], i), y = in_at(in.args[2], i);
      ref.expected.push_back({2, i, ax + y, tolerance::axpy(std::abs(ax), std::abs(y))});
    } else {
      const double a = in_at(in.args[0], i), b = in_at(in.args[1], i);
      const double v = op == "mul" ? a * b : a + b;
      ref.expected.push_back({2, i, v, tolerance::elementwise(v)});
    }
  }
  return ref;
}

// reduce_sum: the one output, summed exactly over every input (O(n), as making the inputs was).
std::optional<Reference> sum_ref(const std::vector<const TensorSpec*>& t, const CallData& in) {
  if (t.size() != 2 || !shaped(t[0], DType::f32, Access::read, 1) || !shaped(t[1], DType::f32, Access::write, 1) ||
      t[1]->shape[0] != 1)
    return std::nullopt;
  const std::uint64_t n = t[0]->shape[0];
  double sum = 0, abs_sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const double x = in_at(in.args[0], i);
    sum += x;
    abs_sum += std::abs(x);
  }
  Reference ref;
  ref.expected.push_back({1, 0, sum, tolerance::reduce_sum(n, abs_sum)});
  return ref;
}

// softmax_rows: whole rows, one per stratum of rows, within the multiply-add budget.
std::optional<Reference> softmax_ref(const std::vector<const TensorSpec*>& t, const CallData& in) {
  if (t.size() != 2 || !shaped(t[0], DType::f32, Access::read, 2) || !shaped(t[1], DType::f32, Access::write, 2) ||
      t[0]->shape != t[1]->shape)
    return std::nullopt;
  const std::uint64_t rows = t[0]->shape[0], cols = t[0]->shape[1];
  Reference ref;
  Stream rng;
  const std::uint64_t count = std::clamp<std::uint64_t>(kSampleFlops / (3 * cols), 1, 64);
  for (const std::uint64_t r : strata(rows, count, rng)) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (std::uint64_t j = 0; j < cols; ++j) mx = std::max(mx, in_at(in.args[0], r * cols + j));
    for (std::uint64_t j = 0; j < cols; ++j) sum += std::exp(in_at(in.args[0], r * cols + j) - mx);
    for (std::uint64_t j = 0; j < cols; ++j) {
      const double v = std::exp(in_at(in.args[0], r * cols + j) - mx) / sum;
      ref.expected.push_back({1, r * cols + j, v, tolerance::softmax(v)});
    }
  }
  return ref;
}

// "C[3,7]" for element i of tensor t.
std::string element_name(const TensorSpec& t, std::uint64_t i) {
  std::string idx;
  for (std::size_t d = t.shape.size(); d-- > 0;) {
    idx = std::to_string(i % t.shape[d]) + (idx.empty() ? "" : "," + idx);
    i /= t.shape[d];
  }
  return t.name + "[" + idx + "]";
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Notes one compared element.
struct Tally {
  Outcome& o;
  void add(const TensorSpec& t, std::uint64_t i, double got, double want, double bound) {
    ++o.checked;
    double ratio = 0;
    if (std::isnan(want) && std::isnan(got)) return;  // a reference run's NaN, matched
    if (std::isinf(want) && got == want) return;      // an infinity, matched
    if (!std::isfinite(got) || !std::isfinite(want)) {
      ratio = kErrorCap;
    } else {
      const double err = std::abs(got - want);
      ratio = bound > 0 ? err / bound : (err == 0 ? 0.0 : kErrorCap);
    }
    ratio = std::min(ratio, kErrorCap);
    if (ratio > 1) {
      ++o.bad;
      const double rel =
          std::isfinite(got) && std::isfinite(want) && want != 0 ? std::abs(got - want) / std::abs(want) : kErrorCap;
      o.max_rel_error = std::max(o.max_rel_error, std::min(rel, kErrorCap));
    }
    if (ratio > o.worst_ratio || o.worst.empty()) {
      o.worst_ratio = ratio;
      o.worst = element_name(t, i) + ": got " + fmt(got) + ", want " + fmt(want) + " ± " + fmt(bound);
    }
  }
};

}  // namespace

std::string Outcome::describe() const {
  const std::string rel = max_rel_error >= kErrorCap ? std::string("inf") : [&] {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", max_rel_error);
    return std::string(buf);
  }();
  return (bad ? "max rel error " + rel + "; " : std::string()) + std::to_string(bad) + " of " +
         std::to_string(checked) + " checked elements out of tolerance against " + against +
         (worst.empty() ? std::string() : "; worst " + worst);
}

std::optional<Reference> builtin_reference(const std::string& op, const KernelPlan& plan, const CallData& inputs) {
  // Built-in plans are named "vgpu.<op>"; a user's factory registered under a built-in's name
  // builds its own op, which only its CPU dialect can vouch for.
  if (plan.source.name != "vgpu." + op) return std::nullopt;
  const std::vector<const TensorSpec*> t = visible(plan);
  if (t.size() != inputs.args.size()) return std::nullopt;
  std::optional<Reference> ref;
  if (op == "matmul" || op == "matmul_tf32")
    ref = matmul_ref(t, inputs, op == "matmul_tf32");
  else if (op == "axpy" || op == "add" || op == "mul")
    ref = elementwise_ref(op, t, inputs);
  else if (op == "reduce_sum")
    ref = sum_ref(t, inputs);
  else if (op == "softmax_rows")
    ref = softmax_ref(t, inputs);
  if (ref) ref->against = "a double-precision reference";
  return ref;
}

Reference run_reference(const KernelPlan& plan, const CallData& result, std::string against) {
  Reference ref;
  ref.against = std::move(against);
  const std::vector<const TensorSpec*> t = visible(plan);
  for (std::uint32_t a = 0; a < t.size() && a < result.args.size(); ++a) {
    if (t[a]->access == Access::read) continue;
    Output out{a, t[a]->dtype, element_count(t[a]->shape), {}};
    out.bytes.resize(tensor_bytes(t[a]->shape, t[a]->dtype));
    std::memcpy(out.bytes.data(), result.args[a].out, out.bytes.size());
    ref.outputs.push_back(std::move(out));
  }
  return ref;
}

Outcome compare(const Reference& ref, const KernelPlan& plan, const CallData& got) {
  Outcome o;
  o.against = ref.against;
  const std::vector<const TensorSpec*> t = visible(plan);
  Tally tally{o};
  for (const Expected& e : ref.expected)
    tally.add(*t.at(e.arg), e.index, out_at(got.args.at(e.arg), e.index), e.value, e.bound);
  for (const Output& out : ref.outputs) {
    const TensorArg& g = got.args.at(out.arg);
    // Floats: relative to the element and to the tensor's typical magnitude (an element near
    // zero may come from cancellation); integers: exactly.
    double mean = 0;
    std::uint64_t finite = 0;
    const bool floating = is_float(out.dtype);
    if (floating)
      for (std::uint64_t i = 0; i < out.count; ++i)
        if (const double v = element_value(out.dtype, out.bytes.data(), i); std::isfinite(v))
          mean += std::abs(v), ++finite;
    mean = finite ? mean / double(finite) : 0;
    const double rel = user_rel_tolerance(out.dtype);
    for (std::uint64_t i = 0; i < out.count; ++i) {
      const double want = element_value(out.dtype, out.bytes.data(), i);
      const double bound = floating ? rel * (std::abs(want) + mean) : 0;
      tally.add(*t.at(out.arg), i, out_at(g, i), want, bound);
    }
  }
  return o;
}

}  // namespace vgpu::detail::check
