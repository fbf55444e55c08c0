// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_nvrtc.cpp — NVRTC compilation to cubin for the exact SM, PTX fallback.
#include "cuda_nvrtc.hpp"
#include "cuda_spec.hpp"

#include <algorithm>

#include "vgpu/error.hpp"

namespace vgpu::cuda {

std::vector<std::string> nvrtc_options(const NvrtcFns& nvrtc, const std::string& kernel, const CompileOptions& options,
                                       int sm, bool* cubin) {
  std::vector<std::string> opts;
  const bool exact = std::find(nvrtc.archs.begin(), nvrtc.archs.end(), sm) != nvrtc.archs.end();
  *cubin = exact;
  int arch = sm;
  if (!exact) {
    // An SM newer than this NVRTC: PTX for the newest SM it knows below, which the driver can
    // JIT forward. (An SM older than every supported one is left to fail with NVRTC's log.)
    for (int a : nvrtc.archs)
      if (a < sm) arch = a;
  }
  // sm_90 exactly: cubin for sm_90a, the same SASS plus the architecture-specific instructions
  // (wgmma, setmaxnreg) that matmul_wgmma.cu uses; the cubin is for this GPU alone anyway.
  const std::string suffix = exact && arch == 90 ? "a" : "";
  opts.push_back((exact ? "-arch=sm_" : "-arch=compute_") + std::to_string(arch) + suffix);
  const std::array<std::uint32_t, 3> size = options.workgroup_size_or_default();
  opts.push_back("-DVGPU_LOCAL_SIZE_X=" + std::to_string(size[0]));
  opts.push_back("-DVGPU_LOCAL_SIZE_Y=" + std::to_string(size[1]));
  opts.push_back("-DVGPU_LOCAL_SIZE_Z=" + std::to_string(size[2]));
  for (const auto& [name, value] : options.defines) opts.push_back("-D" + name + "=" + value);
  for (std::string& d : spec_defines(kernel, options)) opts.push_back(std::move(d));
  return opts;
}

std::vector<std::uint8_t> compile_cuda(const NvrtcFns& nv, const KernelSource& source, const CompileOptions& options,
                                       int sm) {
  bool cubin = false;
  const std::vector<std::string> opts = nvrtc_options(nv, source.name, options, sm, &cubin);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const DialectSource* code = source.find(dialect::cuda);
  if (!code)
    fail(ErrorCategory::not_supported, "kernel '" + source.name + "' has no CUDA source.",
         "add a CUDA C version of the kernel (KernelSource::add_cuda), or run it on another backend.");
  nvrtcProgram prog = nullptr;
  const std::string file = source.name + ".cu";
  nvrtcResult r = nv.nvrtcCreateProgram(&prog, code->code.c_str(), file.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    fail(ErrorCategory::internal, std::string("nvrtcCreateProgram failed: ") + nv.nvrtcGetErrorString(r) + ".",
         "report this with the output of vgpu-probe.");
  struct Guard {
    const NvrtcFns& nv;
    nvrtcProgram& p;
    ~Guard() { nv.nvrtcDestroyProgram(&p); }
  } guard{nv, prog};

  r = nv.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    std::string log;
    if (nv.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      nv.nvrtcGetProgramLog(prog, log.data());
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    } else {
      log = nv.nvrtcGetErrorString(r);
    }
    fail(ErrorCategory::compile_error, "CUDA kernel '" + source.name + "' failed to compile:\n" + log,
         "correct the CUDA source at the line NVRTC reports (" + file + "(line): ...).");
  }
  std::vector<std::uint8_t> image;
  std::size_t size = 0;
  if (cubin) {
    if (nv.nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0)
      fail(ErrorCategory::internal, "NVRTC produced no cubin for '" + source.name + "'.", "report this as a vgpu bug.");
    image.resize(size);
    nv.nvrtcGetCUBIN(prog, reinterpret_cast<char*>(image.data()));
  } else {
    if (nv.nvrtcGetPTXSize(prog, &size) != NVRTC_SUCCESS || size == 0)
      fail(ErrorCategory::internal, "NVRTC produced no PTX for '" + source.name + "'.", "report this as a vgpu bug.");
    image.resize(size);  // size includes the NUL cuModuleLoadData needs
    nv.nvrtcGetPTX(prog, reinterpret_cast<char*>(image.data()));
    if (image.back() != 0) image.push_back(0);
  }
  return image;
}

}  // namespace vgpu::cuda
