// SPDX-License-Identifier: Apache-2.0
// backends/cuda/cuda_context.hpp — the process's primary contexts, one per CUDA device, and
// their resets after a sticky fault.
//
// A sticky error (an illegal address, a trap, an ECC error, ...) poisons the primary context:
// every later call in it fails with the same error, and retaining it again returns the same
// poisoned context. Core opens a fresh device for the same ordinal before it drops the lost
// one, so the lost device cannot reset the context when it goes: it poisons its generation
// here, and the next retain of that ordinal resets the context first (cuDevicePrimaryCtxReset)
// and starts a new generation. A device whose generation is not the current one lives in a
// destroyed context: it frees nothing individually (its pointers could alias the new
// context's allocations) and only balances its retain.
// Thread-safety: every function is safe from any thread.
#pragma once

#include <cstdint>

#include "cuda_loader.hpp"

namespace vgpu::cuda {

/// Retains device's primary context into *ctx, resetting it first when its current generation
/// was poisoned; returns the generation retained. Throws through check_cu, and through
/// fail_poisoned_process for a sticky error (the driver refuses this process a fresh context).
std::uint64_t retain_primary(const DriverFns& f, CUdevice device, CUcontext* ctx);

/// Throws unavailable for a sticky error r from call while a device of GPU name was being
/// opened: after a real kernel fault the driver (580 / CUDA 13 measured on an H200) keeps every
/// context of the process on that GPU poisoned — a reset, a release to zero and a new context all
/// fail the same way — so CUDA on it is back only in a new process.
[[noreturn]] void fail_poisoned_process(const DriverFns& f, CUresult r, const char* call, const std::string& name);

/// Marks generation of device's primary context poisoned: the next retain resets it.
void poison_primary(CUdevice device, std::uint64_t generation) noexcept;

/// Returns true while generation is device's live primary context (not reset since).
bool primary_is_current(CUdevice device, std::uint64_t generation) noexcept;

}  // namespace vgpu::cuda
