// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/plan_hash.cpp — the content hash of a KernelPlan (plan_hash.hpp).
#include "plan_hash.hpp"

#include <xxhash.h>

#include <string_view>

namespace vgpu::detail {
namespace {

// Streams every field that decides what a persistent kernel is into one xxHash3 state:
// every kernel's source text per dialect and specialisation, tensors (dtype, shape, access) and
// the binding topology, kernel, params and groups of every step. Length prefixes keep fields
// from running together.
class PlanHasher {
 public:
  PlanHasher() { XXH3_64bits_reset(state_); }
  ~PlanHasher() { XXH3_freeState(state_); }
  PlanHasher(const PlanHasher&) = delete;
  PlanHasher& operator=(const PlanHasher&) = delete;

  void bytes(const void* data, std::size_t n) {
    const std::uint64_t len = n;
    XXH3_64bits_update(state_, &len, sizeof len);
    XXH3_64bits_update(state_, data, n);
  }
  void text(std::string_view s) { bytes(s.data(), s.size()); }
  void num(std::uint64_t v) { XXH3_64bits_update(state_, &v, sizeof v); }
  std::uint64_t digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_ = XXH3_createState();
};

// Streams a kernel's name and its source per dialect (code, entry, version, CPU callable type).
void hash_sources(PlanHasher& h, const KernelSource& source) {
  h.text(source.name);
  h.num(source.sources.size());
  for (const DialectSource& s : source.sources) {
    h.text(s.dialect);
    h.text(s.code);
    h.text(s.entry);
    h.text(s.version);
    h.text(s.fn ? s.fn.target_type().name() : "");
  }
}

// Streams one kernel of a plan: its source text per dialect, binding ABI and specialisation.
void hash_kernel(PlanHasher& h, const KernelSource& source, const CompileOptions& options) {
  hash_sources(h, source);
  h.num(source.bindings.size());
  for (const auto& b : source.bindings) {
    h.num(b.slot);
    h.num(static_cast<std::uint64_t>(b.access));
  }
  h.num(source.params_size);
  h.num(options.defines.size());
  for (const auto& [k, v] : options.defines) {
    h.text(k);
    h.text(v);
  }
  for (auto w : options.workgroup_size) h.num(w);  // {0, 0, 0}: unset, the shader's own or the default
  h.num(options.spec_constants.size());
  for (const auto& c : options.spec_constants) {
    h.num(c.id ? *c.id : ~std::uint64_t{0});
    h.text(c.name);
    h.num(std::uint64_t(static_cast<int>(c.value.type)) << 32 | c.value.bits);
  }
}

}  // namespace

std::uint64_t plan_content_hash(const std::string& id, const Shape& shape, const KernelPlan& p) {
  PlanHasher h;
  h.text(id);
  h.num(shape.size());
  for (auto d : shape) h.num(d);
  h.num(p.kernel_count());
  for (std::size_t i = 0; i < p.kernel_count(); ++i) hash_kernel(h, p.kernel_source(i), p.kernel_options(i));
  h.num(p.tensors.size());
  for (const auto& t : p.tensors) {
    h.text(t.name);
    h.num(static_cast<std::uint64_t>(t.dtype));
    h.num(t.shape.size());
    for (auto d : t.shape) h.num(d);
    h.num(static_cast<std::uint64_t>(t.access) * 2 + (t.scratch ? 1 : 0));
  }
  h.num(p.steps.size());
  for (const auto& st : p.steps) {
    h.num(st.slot_tensor.size());
    for (const auto& [slot, tensor] : st.slot_tensor) h.num((std::uint64_t{slot} << 32) | tensor);
    h.bytes(st.params.data(), st.params.size());
    h.num(st.groups.x);
    h.num(st.groups.y);
    h.num(st.groups.z);
    h.num(st.kernel);
  }
  return h.digest();
}

std::uint64_t plan_source_hash(const KernelPlan& p) {
  PlanHasher h;
  h.num(p.kernel_count());
  for (std::size_t i = 0; i < p.kernel_count(); ++i) hash_sources(h, p.kernel_source(i));
  return h.digest();
}

}  // namespace vgpu::detail
