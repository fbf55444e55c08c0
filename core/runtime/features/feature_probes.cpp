// SPDX-License-Identifier: Apache-2.0
// core/runtime/features/feature_probes.cpp — the probe kernels of the capability truth tests.
// Each computes something whose every bit is known on the host: exact float16 arithmetic
// (x·3 representable, then +0.5 rounded once), wrapping int8 arithmetic, 16- and 8-bit loads and
// stores with truncation, and subgroup reductions checked against each other (never against a
// subgroup size, which a device may vary).
#include "feature_probes.hpp"

#include <cstring>

#include "vgpu/half.hpp"

namespace vgpu::detail {
namespace {

template <class T>
std::vector<unsigned char> bytes_of(const std::vector<T>& v) {
  std::vector<unsigned char> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <class T>
std::vector<T> values_of(const std::vector<unsigned char>& b) {
  std::vector<T> out(b.size() / sizeof(T));
  std::memcpy(out.data(), b.data(), out.size() * sizeof(T));
  return out;
}

// Every element pair of one probe, on the CPU: out[i] = f(in[i]).
template <class In, class Out, class F>
CpuKernelFn per_element(F f) {
  return [f](const CpuWorkgroup& wg) {
    const std::uint32_t n = wg.params_as<std::uint32_t>();
    const In* in = wg.buffer<const In>(0);
    Out* out = wg.buffer<Out>(1);
    wg.for_each_invocation([&](const std::array<std::uint32_t, 3>& g, const std::array<std::uint32_t, 3>&) {
      if (g[0] < n) out[g[0]] = f(in[g[0]]);
    });
  };
}

// float16: x·3 exact in binary16 for these inputs, so fused or not, one rounding of x·3 + 0.5.
constexpr float kHalfInputs[16] = {1.0f,   2.5f,     -4.0f, 1000.0f, 0.25f,  7.0f,   -1.5f, 300.0f,
                                   0.125f, -2048.0f, 11.0f, 13.5f,   -0.75f, 100.0f, 5.0f,  10000.0f};
float half_probe(float x) {
  const float h3 = half_bits_to_float(float_to_half_bits(x * 3.0f));
  return half_bits_to_float(float_to_half_bits(h3 + 0.5f));
}
std::int32_t int8_probe(std::int32_t x) {
  const auto a = static_cast<std::int8_t>(x);
  return static_cast<std::int8_t>(static_cast<std::int8_t>(a * 3) + 1);
}
std::uint16_t u16_probe(std::uint16_t x) { return static_cast<std::uint16_t>(x * 3u + 7u); }
std::uint8_t u8_probe(std::uint8_t x) { return static_cast<std::uint8_t>(x * 5u + 3u); }
template <class T>
T unchanged(T x) {
  return x;
}

// Each probe's i-th input.
float half_input(std::uint32_t i) { return kHalfInputs[i % 16]; }
std::int32_t int8_input(std::uint32_t i) { return static_cast<std::int32_t>((i * 37u) % 256u) - 128; }
std::uint16_t u16_input(std::uint32_t i) { return static_cast<std::uint16_t>((i * 2654435761u) >> 16); }
std::uint8_t u8_input(std::uint32_t i) { return static_cast<std::uint8_t>((i * 2654435761u) >> 24); }
std::uint32_t u32_input(std::uint32_t i) { return (i * 7919u) % 1000u; }

// A probe's n inputs, Input(i) each, as bytes (FeatureProbe::input).
template <class T, T (*Input)(std::uint32_t)>
std::vector<unsigned char> generated(std::uint32_t n) {
  std::vector<T> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = Input(i);
  return bytes_of(v);
}

// The expected outputs, F of each input, as bytes (FeatureProbe::expected).
template <class T, T (*F)(T)>
std::vector<unsigned char> mapped(const std::vector<unsigned char>& in, std::uint32_t) {
  std::vector<T> v = values_of<T>(in);
  for (T& x : v) x = F(x);
  return bytes_of(v);
}

constexpr std::string_view kFloat16Glsl = R"(#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { float x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  const float16_t a = float16_t(x[i]);
  const float16_t b = a * float16_t(3.0);
  y[i] = float(b + float16_t(0.5));
}
)";

constexpr std::string_view kInt8Glsl = R"(#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { int x[]; };
layout(std430, binding = 1) writeonly buffer Out { int y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  const int8_t a = int8_t(x[i]);
  y[i] = int(a * int8_t(3) + int8_t(1));
}
)";

constexpr std::string_view kStorage16Glsl = R"(#extension GL_EXT_shader_16bit_storage : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { uint16_t x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint16_t y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  y[i] = uint16_t(uint(x[i]) * 3u + 7u);
}
)";

constexpr std::string_view kStorage8Glsl = R"(#extension GL_EXT_shader_8bit_storage : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint8_t y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.n) return;
  y[i] = uint8_t(uint(x[i]) * 5u + 3u);
}
)";

// Every invocation takes part (no early return before the subgroup operations). Whatever the
// partition into subgroups: an inclusive sum of ones counts 1, 2, … up to the subgroup's active
// invocations, whose total subgroupAdd gives; the sum of the values equals the largest
// inclusive sum of them (non-negative values). Right: y = x; wrong: ~0u.
constexpr std::string_view kSubgroupGlsl = R"(#extension GL_KHR_shader_subgroup_arithmetic : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { uint x[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint v = i < p.n ? x[i] : 0u;
  const uint count = subgroupAdd(1u);
  const uint rank = subgroupInclusiveAdd(1u);
  const bool ok = rank == subgroupExclusiveAdd(1u) + 1u && subgroupMax(rank) == count && subgroupMin(rank) == 1u &&
                  count <= gl_SubgroupSize && subgroupAdd(v) == subgroupMax(subgroupInclusiveAdd(v));
  if (i < p.n) y[i] = ok ? v : 0xFFFFFFFFu;
}
)";

// Cooperative matrices (VK_NV_cooperative_matrix): the 256 inputs are one 16×16 float16 matrix
// A of small integers, loaded as A and again column-major as Aᵀ; the first subgroup writes
// C = A·A + A·Aᵀ (every product and sum exact in float32), so both layouts and the
// accumulation are checked. Each output is C's element, row-major.
constexpr int kCoopDim = 16;
float coop_input_value(std::uint32_t i) { return static_cast<float>(static_cast<int>((i * 7u + i / 16u) % 7u) - 3); }
std::vector<unsigned char> coop_input(std::uint32_t n) {
  std::vector<std::uint16_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = float_to_half_bits(coop_input_value(i));
  return bytes_of(v);
}
std::vector<float> coop_product(const std::uint16_t* a) {
  std::vector<float> c(kCoopDim * kCoopDim);
  for (int r = 0; r < kCoopDim; ++r)
    for (int col = 0; col < kCoopDim; ++col) {
      float s = 0;
      for (int q = 0; q < kCoopDim; ++q)
        s += half_bits_to_float(a[r * kCoopDim + q]) *
             (half_bits_to_float(a[q * kCoopDim + col]) + half_bits_to_float(a[col * kCoopDim + q]));
      c[r * kCoopDim + col] = s;
    }
  return c;
}
std::vector<unsigned char> coop_expected(const std::vector<unsigned char>& in, std::uint32_t) {
  return bytes_of(coop_product(values_of<std::uint16_t>(in).data()));
}
void coop_cpu(const CpuWorkgroup& wg) {
  const std::uint16_t* a = wg.buffer<const std::uint16_t>(0);
  float* out = wg.buffer<float>(1);
  wg.for_each_invocation([&](const std::array<std::uint32_t, 3>& g, const std::array<std::uint32_t, 3>&) {
    if (g[0] != 0) return;
    const std::vector<float> c = coop_product(a);
    std::memcpy(out, c.data(), c.size() * sizeof(float));
  });
}

constexpr std::string_view kCoopMatrixGlsl = R"(#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
VGPU_PARAMS { uint n; uint pad0; uint pad1; uint pad2; } p;
layout(std430, binding = 0) readonly buffer In { float16_t x[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
void main() {
  // Uniform per subgroup whatever its size: the first subgroup of the first workgroup.
  if (gl_WorkGroupID.x != 0u || gl_SubgroupID != 0u) return;
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, at;
  coopMatLoadNV(a, x, 0, 16, false);
  coopMatLoadNV(at, x, 0, 16, true);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  c = coopMatMulAddNV(a, a, c);
  c = coopMatMulAddNV(a, at, c);
  coopMatStoreNV(c, y, 0, 16, false);
}
)";

}  // namespace

const std::vector<FeatureProbe>& feature_probes() {
  // Leaked: a background calibration may compile a kernel late (vgpu/backend/exit_order.hpp).
  static const auto* probes = new std::vector<FeatureProbe>{
      {"shader_float16", "Float16", kFloat16Glsl, 4, 4, per_element<float, float>(half_probe),
       generated<float, half_input>, mapped<float, half_probe>},
      {"shader_int8", "Int8", kInt8Glsl, 4, 4, per_element<std::int32_t, std::int32_t>(int8_probe),
       generated<std::int32_t, int8_input>, mapped<std::int32_t, int8_probe>},
      {"storage_buffer_16bit", "StorageBuffer16BitAccess", kStorage16Glsl, 2, 2,
       per_element<std::uint16_t, std::uint16_t>(u16_probe), generated<std::uint16_t, u16_input>,
       mapped<std::uint16_t, u16_probe>},
      {"storage_buffer_8bit", "StorageBuffer8BitAccess", kStorage8Glsl, 1, 1,
       per_element<std::uint8_t, std::uint8_t>(u8_probe), generated<std::uint8_t, u8_input>,
       mapped<std::uint8_t, u8_probe>},
      // The subgroup sums are checked against each other in the shader: each output is its input.
      {"subgroup_arithmetic", "GroupNonUniformArithmetic", kSubgroupGlsl, 4, 4,
       per_element<std::uint32_t, std::uint32_t>(unchanged<std::uint32_t>), generated<std::uint32_t, u32_input>,
       mapped<std::uint32_t, unchanged<std::uint32_t>>},
      // One 16×16 product per run (the outputs are C's 256 elements): only C's bits are compared.
      {"cooperative_matrix", "CooperativeMatrixNV", kCoopMatrixGlsl, 2, 4, coop_cpu, coop_input, coop_expected},
  };
  return *probes;
}

}  // namespace vgpu::detail
