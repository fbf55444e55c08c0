// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/call_data.cpp — random host data for calibration calls.
#include "call_data.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace vgpu::detail {
namespace {

TensorArg arg_for(const TensorSpec& t, void* p) {
  return t.access == Access::read ? TensorArg(t.dtype, t.shape, static_cast<const void*>(p))
                                  : TensorArg(t.dtype, t.shape, p);
}

}  // namespace

CallData make_call_data(const KernelPlan& plan) {
  CallData d;
  // xorshift64: filling 10^8 elements must take well under a second (mt19937 + a distribution
  // took seconds), and any spread of values times a kernel the same. Floats are in [-0.5, 1):
  // both signs, but a mean of 0.25, so that a sum that stops early (Mesa's software devices
  // stop loops after 65 535 iterations, issue 29) is short by about a quarter of each missing
  // term, which the result check sees; zero-mean values would hide it in their random walk.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (const TensorSpec& t : plan.tensors) {
    if (t.scratch) continue;
    const std::uint64_t n = element_count(t.shape);
    const std::uint64_t total = tensor_bytes(t.shape, t.dtype);  // checked: never a wrapped, small storage
    auto& v = d.storage.emplace_back(total / 8 + (total % 8 != 0));
    auto* bytes = reinterpret_cast<unsigned char*>(v.data());
    for (std::uint64_t i = 0; i < n; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const double f = static_cast<double>(3 * static_cast<std::int64_t>(state >> 40) - (1 << 24)) / double(1 << 25);
      // Floats in [-0.5, 1); integers in [0, 128), which every integer dtype holds.
      set_element_value(t.dtype, bytes, i, is_float(t.dtype) ? f : static_cast<double>(state >> 57));
    }
  }
  std::size_t i = 0;
  for (const TensorSpec& t : plan.tensors)
    if (!t.scratch) d.args.push_back(arg_for(t, d.storage[i++].data()));
  return d;
}

std::string call_signature(const KernelPlan& plan) {
  std::string sig;
  for (const TensorSpec& t : plan.tensors)
    if (!t.scratch)
      sig += std::to_string(static_cast<int>(t.dtype)) + to_string(t.shape) +
             std::to_string(static_cast<int>(t.access)) + ";";
  return sig;
}

HostDataPool::Entry& HostDataPool::entry(const KernelPlan& plan) {
  const std::string sig = call_signature(plan);
  for (Entry& e : pool_)
    if (e.signature == sig) return e;
  Entry e{sig, std::make_unique<CallData>(make_call_data(plan)), {}};
  // Only read_write tensors change under a call (inputs are uploaded, outputs overwritten by
  // the readback): their first values are kept to restore.
  std::size_t i = 0;
  for (const TensorSpec& t : plan.tensors) {
    if (t.scratch) continue;
    e.initial.push_back(t.access == Access::read_write ? e.data->storage[i] : std::vector<std::uint64_t>{});
    ++i;
  }
  return pool_.emplace_back(std::move(e));
}

CallData& HostDataPool::for_plan(const KernelPlan& plan) { return *entry(plan).data; }

CallData& HostDataPool::pristine(const KernelPlan& plan) {
  Entry& e = entry(plan);
  for (std::size_t i = 0; i < e.initial.size(); ++i)
    if (!e.initial[i].empty()) std::copy(e.initial[i].begin(), e.initial[i].end(), e.data->storage[i].begin());
  return *e.data;
}

}  // namespace vgpu::detail
