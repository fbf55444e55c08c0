// SPDX-License-Identifier: Apache-2.0
// bench/bench_dtypes.cpp — vgpu-bench-dtypes: matmul on float32, float16 and bfloat16 arrays per
// device, sampled round-robin in one run (issue 32): C = A·B on vgpu::Arrays already on the
// device, then one synchronize. GFLOP/s per dtype and each 16-bit dtype's ratio to float32 on
// the same device (the CPU goal: ≥ 0.8). N = 256, 512, 1024 on the CPU, 1024, 4096 and 8192 on
// hardware GPUs, 128 and 256 on software GPUs; --quick: 128 and 256 everywhere. On CUDA devices,
// and on Vulkan/OpenGL devices that are the same GPU (their name starts with CUDA's), each
// dtype's GFLOP/s is also given as a share of cuBLAS's in the same run (SGEMM with TF32 off; cublasGemmEx on 16-bit A,
// B, C with float32 accumulation: the issue-32 goals are CUDA 95 % and 70 %, Vulkan/OpenGL 75 %
// in float32 and Vulkan 50 % in 16 bits), and a TF32 column (matmul_tf32 against SGEMM with
// CUBLAS_TF32_TENSOR_OP_MATH). Each 16-bit result is checked against the float32 result of the
// same (16-bit) inputs, within the one rounding it adds, and TF32's within its input rounding.
// VGPU_BENCH_BACKENDS=cpu,cuda limits the devices.
#include <cmath>
#include <iostream>
#include <optional>

#include "bench_util.hpp"
#include "cublas_ref.hpp"
#include "vgpu/vgpu.hpp"

namespace vb = vgpu::bench;

namespace {

// Bits of v in dtype (each rounded once to nearest even), as an array's bytes.
std::vector<unsigned char> encode(const std::vector<float>& v, vgpu::DType dtype) {
  std::vector<unsigned char> out(v.size() * vgpu::dtype_size(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) vgpu::set_element_value(dtype, out.data(), i, v[i]);
  return out;
}

// v rounded to dtype and back.
std::vector<float> representable(const std::vector<float>& v, vgpu::DType dtype) {
  const auto bytes = encode(v, dtype);
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(vgpu::element_value(dtype, bytes.data(), i));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const vb::Options o = vb::parse_args(argc, argv, "matmul on float32, float16 and bfloat16 arrays per device");
  const std::vector<vgpu::BackendKind> wanted = vb::backends_from_env();
  const int rounds = o.quick ? 5 : 11;
  const double target = o.quick ? 0.01 : 0.05;
  nlohmann::json doc{{"bench", "dtypes"},
                     {"machine", vb::print_header("vgpu-bench-dtypes: matmul per dtype per device", o)}};
  vb::Table t({"device", "N", "float32 GFLOP/s", "float16 GFLOP/s", "bfloat16 GFLOP/s", "tf32 GFLOP/s", "f16 / f32",
               "bf16 / f32", "f32 / cuBLAS", "f16 / cuBLAS", "bf16 / cuBLAS", "tf32 / cuBLAS"});
  std::optional<vb::CublasReference> cublas;  // loaded for the first CUDA device
  nlohmann::json out = nlohmann::json::array();
  bool failed = false;
  constexpr vgpu::DType kDTypes[] = {vgpu::DType::f32, vgpu::DType::f16, vgpu::DType::bf16};
  // The GPU cuBLAS runs on: Vulkan and OpenGL devices of the same name get its columns too.
  std::string cuda_gpu;
  for (const auto& info : vgpu::Runtime::global().devices())
    if (info.backend == vgpu::BackendKind::cuda && cuda_gpu.empty()) cuda_gpu = info.name;
  for (const auto& info : vgpu::Runtime::global().devices()) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), info.backend) == wanted.end()) continue;
    try {
      vgpu::Device dev = vgpu::Runtime::global().open(info.id());
      const bool software = info.type == vgpu::DeviceType::software;
      const bool gpu = info.type == vgpu::DeviceType::discrete_gpu || info.type == vgpu::DeviceType::integrated_gpu;
      // OpenGL names the GPU with suffixes ("NVIDIA H200/PCIe/SSE2"): the CUDA name as a prefix.
      const bool vs_cublas =
          info.backend == vgpu::BackendKind::cuda || (gpu && !cuda_gpu.empty() && info.name.rfind(cuda_gpu, 0) == 0);
      const std::vector<std::uint32_t> sizes = o.quick || software ? std::vector<std::uint32_t>{128, 256}
                                               : gpu               ? std::vector<std::uint32_t>{1024, 4096, 8192}
                                                                   : std::vector<std::uint32_t>{256, 512, 1024};
      if (vs_cublas && !cublas) {
        cublas.emplace();
        if (!cublas->available()) std::cout << "cuBLAS columns left out: " << cublas->reason() << "\n";
      }
      for (std::uint32_t n : sizes) {
        const std::uint64_t nn = std::uint64_t{n} * n;
        const std::vector<float> a = vb::random_floats(nn, 1), b = vb::random_floats(nn, 2);
        std::vector<vgpu::Array> A, B, C;
        std::vector<vb::Case> cases;
        for (vgpu::DType d : kDTypes) {
          // Every dtype multiplies the same (16-bit representable) values: the f32 run is the check.
          const auto ra = representable(a, vgpu::DType::bf16), rb = representable(b, vgpu::DType::bf16);
          A.push_back(vgpu::Array::from_host(dev, d, {n, n}, encode(ra, d).data()));
          B.push_back(vgpu::Array::from_host(dev, d, {n, n}, encode(rb, d).data()));
          C.push_back(vgpu::Array::empty(dev, d, {n, n}));
        }
        for (std::size_t i = 0; i < 3; ++i)
          cases.push_back({std::string(vgpu::to_string(kDTypes[i])),
                           [&, i] {
                             vgpu::matmul(A[i], B[i], C[i]);
                             dev.synchronize();
                           },
                           1});
        // float32 operands with TF32 allowed (matmul_tf32: TF32 tensor cores on CUDA sm_80+).
        C.push_back(vgpu::Array::empty(dev, vgpu::DType::f32, {n, n}));
        cases.push_back({"tf32",
                         [&] {
                           vgpu::matmul(A[0], B[0], C[3], vgpu::ops::Precision::tf32);
                           dev.synchronize();
                         },
                         1});
        const auto st = vb::run_interleaved(cases, rounds, target);
        // Checked: each 16-bit result within one rounding (plus float32's own bound) of the f32 one.
        std::vector<unsigned char> ref(nn * 4), got(nn * 2);
        C[0].read(ref.data());
        bool ok = true;
        for (std::size_t i = 1; i < 3; ++i) {
          C[i].read(got.data());
          const double u = kDTypes[i] == vgpu::DType::f16 ? 0x1p-11 : 0x1p-8;
          for (std::uint64_t j = 0; j < nn && ok; ++j) {
            const double want = vgpu::element_value(vgpu::DType::f32, ref.data(), j);
            const double have = vgpu::element_value(kDTypes[i], got.data(), j);
            ok = std::abs(have - want) <= u * std::abs(want) + 1e-4 * n;
          }
        }
        // TF32: each input rounded to 10 bits, |error| ≤ 2^-10·Σ|a||b| ≤ 2^-10·n (|a|, |b| ≤ 1).
        std::vector<unsigned char> tf32(nn * 4);
        C[3].read(tf32.data());
        for (std::uint64_t j = 0; j < nn && ok; ++j)
          ok = std::abs(vgpu::element_value(vgpu::DType::f32, tf32.data(), j) -
                        vgpu::element_value(vgpu::DType::f32, ref.data(), j)) <= (0x1p-10 + 1e-4) * n;
        if (!ok) {
          failed = true;
          std::cout << "WRONG " << info.id() << " N=" << n << ": a 16-bit or TF32 result differs from float32's\n";
        }
        const double flop = 2.0 * double(nn) * n;
        auto gflops = [&](std::size_t i) { return flop / st[i].median / 1e9; };
        // cuBLAS on the same dtypes, right after vgpu's runs of this size (0: not measured).
        double cublas_gf[4] = {0, 0, 0, 0};
        if (vs_cublas && cublas && cublas->available()) {
          for (std::size_t i = 0; i < 3; ++i) cublas_gf[i] = cublas->gemm_gflops(int(n), kDTypes[i], rounds);
          cublas_gf[3] = cublas->gemm_gflops(int(n), vgpu::DType::f32, rounds, true);
        }
        auto share = [&](std::size_t i) {
          return cublas_gf[i] > 0 ? vb::fmt_ratio(gflops(i) / cublas_gf[i]) : std::string("-");
        };
        t.add({info.id(), std::to_string(n), vb::fmt(gflops(0)), vb::fmt(gflops(1)), vb::fmt(gflops(2)),
               vb::fmt(gflops(3)), vb::fmt_ratio(gflops(1) / gflops(0)), vb::fmt_ratio(gflops(2) / gflops(0)), share(0),
               share(1), share(2), share(3)});
        nlohmann::json row{{"device", info.id()},
                           {"n", n},
                           {"f32", st[0].to_json()},
                           {"f16", st[1].to_json()},
                           {"bf16", st[2].to_json()},
                           {"tf32", st[3].to_json()},
                           {"checked", ok}};
        if (cublas_gf[0] > 0)
          row["cublas_gflops"] = {
              {"f32", cublas_gf[0]}, {"f16", cublas_gf[1]}, {"bf16", cublas_gf[2]}, {"tf32", cublas_gf[3]}};
        out.push_back(row);
      }
    } catch (const vgpu::Error& e) {
      std::cout << info.id() << ": skipped (" << e.what() << ")\n";
    }
  }
  t.print(std::cout);
  doc["rows"] = out;
  if (!vb::finish(doc, o)) return 1;
  return failed ? 1 : 0;
}
