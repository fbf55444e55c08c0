// SPDX-License-Identifier: Apache-2.0
// core/runtime/device/registry.cpp — the one place that lists backends: ordered, CPU last, no static
// self-registration (so link order can never change which backends exist). Adding a backend
// is one entry in kRegistry (its factory, with its #if below, and its built-in ops' tuner);
// nothing else in core changes.
#include "registry.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/backend/registry.hpp"
#include "vgpu/kernels/gpu_tuning.hpp"

namespace vgpu {
// Each backend's factory, defined in its own folder when its CMake option is ON (the CPU one,
// which tests also call, is declared in vgpu/backend/registry.hpp).
std::unique_ptr<ComputeBackend> make_cuda_backend(std::shared_ptr<const BackendSettings> settings);
std::unique_ptr<ComputeBackend> make_vulkan_backend(std::shared_ptr<const BackendSettings> settings);
std::unique_ptr<ComputeBackend> make_opengl_backend(std::shared_ptr<const BackendSettings> settings);
}  // namespace vgpu
// The rules by which vgpu's own backends run the built-in ops, defined in their folders.
namespace vgpu::cpu {
std::shared_ptr<const OpTuner> cpu_op_tuner();
}  // namespace vgpu::cpu
namespace vgpu::cuda {
std::shared_ptr<const OpTuner> configured_cuda_op_tuner();
}  // namespace vgpu::cuda

namespace vgpu::detail {
namespace {

using Factory = std::unique_ptr<ComputeBackend> (*)(std::shared_ptr<const BackendSettings>);
// The same functions the backends' op_tuner() return: the GLSL backends share one rule, CUDA
// has its own tilings, each with VGPU_MATMUL_TILING read when a plan asks.
using TunerFactory = std::shared_ptr<const OpTuner> (*)();

// A backend built out of this library has no factory (nullptr), only its name and option.
#if VGPU_WITH_CUDA
constexpr Factory kCuda = make_cuda_backend;
constexpr TunerFactory kCudaTuner = cuda::configured_cuda_op_tuner;
#else
constexpr Factory kCuda = nullptr;
constexpr TunerFactory kCudaTuner = nullptr;
#endif
#if VGPU_WITH_VULKAN
constexpr Factory kVulkan = make_vulkan_backend;
#else
constexpr Factory kVulkan = nullptr;
#endif
#if VGPU_WITH_OPENGL
constexpr Factory kOpengl = make_opengl_backend;
#else
constexpr Factory kOpengl = nullptr;
#endif

// A backend's kind is the one its name makes (BackendKind::named).
struct Entry {
  const char* name;             // as in VGPU_BACKEND and device ids
  const char* option;           // the CMake option that builds it
  Factory make;                 // null when built without it
  TunerFactory tuner;           // how it runs the built-in ops (ComputeBackend::op_tuner's default)
  BufferAddress::Space memory;  // what its buffers' addresses are to other code (DLPack's device type)
};

// Preference order: selection measures, but this order breaks ties and orders listings.
const Entry kRegistry[] = {
    {"cuda", "VGPU_WITH_CUDA", kCuda, kCudaTuner, BufferAddress::Space::cuda_device},
    {"vulkan", "VGPU_WITH_VULKAN", kVulkan, kernels::configured_gpu_builtin_tuner, BufferAddress::Space::none},
    {"opengl", "VGPU_WITH_OPENGL", kOpengl, kernels::configured_gpu_builtin_tuner, BufferAddress::Space::none},
    {"cpu", "(always built)", make_cpu_backend, cpu::cpu_op_tuner, BufferAddress::Space::host},
};

// The rules of backends vgpu does not register, by kind: a backend's kind is fixed for the
// process, so its rule is too. Never destroyed: plans may be made while the process exits.
struct AddedRules {
  std::mutex mutex;  // a leaf
  std::map<std::string, std::shared_ptr<const OpTuner>, std::less<>> by_kind;
};
AddedRules& added_rules() {
  static AddedRules* rules = new AddedRules();
  return *rules;
}

const Entry* entry_of(BackendKind kind) {
  for (const Entry& e : kRegistry)
    if (e.name == to_string(kind)) return &e;
  return nullptr;
}

}  // namespace

std::vector<BackendKind> known_backends() {
  std::vector<BackendKind> kinds;
  for (const Entry& e : kRegistry) kinds.push_back(BackendKind::named(e.name));
  return kinds;
}

std::vector<std::unique_ptr<ComputeBackend>> make_compiled_backends(
    const std::shared_ptr<const BackendSettings>& settings) {
  std::vector<std::unique_ptr<ComputeBackend>> backends;
  for (const Entry& e : kRegistry)
    if (e.make) backends.push_back(e.make(settings));
  return backends;
}

std::optional<BackendKind> backend_for_memory(BufferAddress::Space space) {
  if (space == BufferAddress::Space::none) return std::nullopt;
  for (const Entry& e : kRegistry)
    if (e.memory == space) return BackendKind::named(e.name);
  return std::nullopt;
}

BufferAddress::Space memory_of(BackendKind kind) {
  const Entry* e = entry_of(kind);
  return e ? e->memory : BufferAddress::Space::none;
}

std::shared_ptr<const OpTuner> registered_op_tuner(BackendKind kind) {
  if (const Entry* e = entry_of(kind)) return e->tuner ? e->tuner() : nullptr;
  AddedRules& rules = added_rules();
  std::lock_guard lock(rules.mutex);
  const auto it = rules.by_kind.find(to_string(kind));
  return it == rules.by_kind.end() ? nullptr : it->second;
}

void remember_op_tuner(const ComputeBackend& backend) {
  if (entry_of(backend.kind())) return;
  std::shared_ptr<const OpTuner> tuner = backend.op_tuner();
  if (!tuner) return;
  AddedRules& rules = added_rules();
  std::lock_guard lock(rules.mutex);
  rules.by_kind.try_emplace(std::string(to_string(backend.kind())), std::move(tuner));
}

std::shared_ptr<const OpTuner> op_tuner_of(const ComputeBackend& backend) {
  if (auto own = backend.op_tuner()) return own;
  return registered_op_tuner(backend.kind());
}

const char* build_option(BackendKind kind) {
  const Entry* e = entry_of(kind);
  return e ? e->option : "(not in this build's registry)";
}

}  // namespace vgpu::detail
