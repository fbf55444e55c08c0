// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_kernels.cpp — module loading: the L3 fatbins of the built-ins, then the L2
// cache of module images, then CUDA C → cubin (or PTX) with NVRTC.
#include <algorithm>
#include <chrono>
#include <string>

#include "cuda_device.hpp"
#include "cuda_nvrtc.hpp"
#include "cuda_spec.hpp"
#include "vgpu/backend/kernel_l2.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/cache/payload_check.hpp"
#include "vgpu/cache/precompiled.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"

namespace vgpu::cuda {

void CudaDevice::unload(CUmodule module) {
  // No queued launch uses it any more: core frees a kernel only after its last use has run.
  if (!module || process_exiting() || context_gone()) return;
  fn_.cuModuleUnload(module);
}

std::vector<std::uint8_t> CudaDevice::image_for(const KernelSource& source, const DialectSource& code,
                                                const CompileOptions& options, bool use_l2, bool* from_l2,
                                                std::uint64_t* compile_us) {
  *from_l2 = false;
  KernelL2Entry l2(counters(), l2_store(), cache::EntryKind::cuda_binary,
                   cache::make_kernel_key(source, code, options, info_.fingerprint), info_.fingerprint);
  if (l2.enabled() && use_l2) {
    if (auto blob = l2.load()) {
      // The driver must only see a well-formed ELF cubin or NUL-terminated PTX (it takes no
      // length). DiskStore::load has checked that already (cache::payload_problem); checked
      // again here because the driver reads past the end of anything else.
      if (cache::cuda_image_problem(*blob).empty()) {
        *from_l2 = true;  // counted as a hit once the driver took it (load_compiled)
        return std::move(*blob);
      }
      l2.reject("invalid");
    }
  }
  if (!nvrtc_)
    fail(ErrorCategory::unavailable, "CUDA kernel '" + source.name + "' needs NVRTC, which is not installed.",
         "install the CUDA NVRTC runtime (libnvrtc.so.13 or .12), or run on another backend.");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::uint8_t> image = compile_cuda(*nvrtc_, source, options, cc_major_ * 10 + cc_minor_);
  counters().source_compiles.fetch_add(1, std::memory_order_relaxed);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  *compile_us = static_cast<std::uint64_t>(us.count());
  return image;
}

std::unique_ptr<KernelImpl> CudaDevice::compile(const KernelSource& source, const DialectSource& code,
                                                const CompileOptions& options) {
  if (code.code.empty() || code.entry.empty())
    fail(ErrorCategory::not_supported, "kernel '" + source.name + "' has no CUDA source with an entry point.",
         "pass the CUDA C text and its extern \"C\" kernel name (KernelSource::add_cuda), or run it on another "
         "backend.");
  spec_defines(source.name, options);  // refuses a constant set by id before any cache lookup
  auto k = std::make_unique<CudaKernelImpl>(*this);
  for (const auto& b : source.bindings) k->slots.push_back(b.slot);
  std::sort(k->slots.begin(), k->slots.end());
  k->params_size = source.params_size;
  k->block = options.workgroup_size_or_default();

  CUresult r = CUDA_ERROR_NOT_FOUND;
  // L3: a built-in variant nvcc compiled at build time; the driver picks this SM's SASS or JITs
  // the PTX. A refusal (e.g. a driver older than the toolkit's PTX) falls through to L2/NVRTC.
  if (const auto fatbin = cache::find_precompiled_cuda(code.code, code.entry, options); !fatbin.empty()) {
    make_current();
    r = fn_.cuModuleLoadData(&k->module, fatbin.data());
    if (r == CUDA_SUCCESS) {
      counters().l3_hits.fetch_add(1, std::memory_order_relaxed);
    } else {
      k->module = nullptr;
      log(LogLevel::warn, "CUDA: the driver refused the built-in fatbin for '" + source.name + "' (" +
                              error_text(fn_, r) + "); compiling it with NVRTC instead.");
    }
  }
  if (r != CUDA_SUCCESS) r = load_compiled(*k, source, code, options);
  if (r != CUDA_SUCCESS) {
    k->module = nullptr;
    fail(ErrorCategory::compile_error,
         "CUDA kernel '" + source.name + "' compiled but the driver could not load it: " + error_text(fn_, r) + ".",
         "check the kernel's resource use (shared memory, registers) against " + info_.name + "'s limits.");
  }
  r = fn_.cuModuleGetFunction(&k->function, k->module, code.entry.c_str());
  if (r != CUDA_SUCCESS)
    fail(ErrorCategory::compile_error,
         "CUDA kernel '" + source.name + "' has no entry point '" + code.entry + "' (" + error_text(fn_, r) + ").",
         "declare it as extern \"C\" __global__ void " + code.entry + "(...), or fix the entry passed to add_cuda.");
  k->shared_bytes = dynamic_shared_bytes(*k, source.name);
  return k;
}

std::uint32_t CudaDevice::dynamic_shared_bytes(CudaKernelImpl& k, const std::string& name) {
  CUdeviceptr symbol = 0;
  std::size_t size = 0;
  if (fn_.cuModuleGetGlobal(&symbol, &size, k.module, "vgpu_dynamic_shared_bytes") != CUDA_SUCCESS) return 0;
  std::uint32_t bytes = 0;
  if (size != sizeof bytes)
    fail(ErrorCategory::compile_error,
         "CUDA kernel '" + name + "' defines vgpu_dynamic_shared_bytes with " + std::to_string(size) +
             " bytes; it must be a 4-byte unsigned.",
         "declare it as extern \"C\" { __constant__ unsigned vgpu_dynamic_shared_bytes = <bytes>; }.");
  check(fn_.cuMemcpyDtoH(&bytes, symbol, sizeof bytes), "cuMemcpyDtoH");
  if (bytes == 0) return 0;
  int optin = 0;
  fn_.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_);
  // Static __shared__ arrays count against the same limit.
  int static_bytes = 0;
  fn_.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function);
  if (static_cast<std::uint64_t>(bytes) + static_cast<std::uint64_t>(static_bytes) > static_cast<std::uint64_t>(optin))
    fail(ErrorCategory::not_supported,
         "CUDA kernel '" + name + "' asks for " + std::to_string(bytes) + " bytes of dynamic shared memory (+" +
             std::to_string(static_bytes) + " static); " + info_.name + " gives a block at most " +
             std::to_string(optin) + ".",
         "lower vgpu_dynamic_shared_bytes (fewer pipeline stages or smaller tiles), or run it on a GPU with more "
         "shared memory.");
  check(fn_.cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        "cuFuncSetAttribute");
  return bytes;
}

CUresult CudaDevice::load_compiled(CudaKernelImpl& k, const KernelSource& source, const DialectSource& code,
                                   const CompileOptions& options) {
  bool from_l2 = false;
  std::uint64_t compile_us = 0;
  std::vector<std::uint8_t> image = image_for(source, code, options, true, &from_l2, &compile_us);
  make_current();
  CUresult r = fn_.cuModuleLoadData(&k.module, image.data());
  if (r == CUDA_SUCCESS && from_l2) {
    // A cached image the driver loads but that lacks the entry point (a damaged or foreign
    // module) is refused too: otherwise every later process would fail on it.
    CUfunction probe = nullptr;
    r = fn_.cuModuleGetFunction(&probe, k.module, code.entry.c_str());
    if (r != CUDA_SUCCESS) {
      fn_.cuModuleUnload(k.module);
      k.module = nullptr;
    } else {
      counters().l2_hits.fetch_add(1, std::memory_order_relaxed);  // a hit is a cached module in use
    }
  }
  if (r != CUDA_SUCCESS && from_l2) {
    // The driver refused a cached image: drop it and build from source.
    KernelL2Entry(counters(), l2_store(), cache::EntryKind::cuda_binary,
                  cache::make_kernel_key(source, code, options, info_.fingerprint), info_.fingerprint)
        .reject("driver");
    log(LogLevel::warn, "CUDA: the driver refused a cached module for '" + source.name + "' (" + error_text(fn_, r) +
                            "); recompiling.");
    image = image_for(source, code, options, false, &from_l2, &compile_us);
    make_current();
    r = fn_.cuModuleLoadData(&k.module, image.data());
  }
  // A compiled module goes to L2 only once it loads and has the entry point: a kernel that can
  // never run leaves nothing behind for later processes to trip over.
  CUfunction entry = nullptr;
  if (r == CUDA_SUCCESS && !from_l2 && fn_.cuModuleGetFunction(&entry, k.module, code.entry.c_str()) == CUDA_SUCCESS)
    KernelL2Entry(counters(), l2_store(), cache::EntryKind::cuda_binary,
                  cache::make_kernel_key(source, code, options, info_.fingerprint), info_.fingerprint)
        .store(image, compile_us, source.name);
  return r;
}

}  // namespace vgpu::cuda
