// SPDX-License-Identifier: Apache-2.0
// python/src/dlpack_versioned.hpp — DLPack 1.0's versioned managed tensor, where the installed
// dlpack.h predates it (Debian 12's libdlpack-dev is 0.6).
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>

#ifndef DLPACK_MAJOR_VERSION
// The DLPack 1.0 ABI (dlpack.h 1.0, "DLManagedTensorVersioned"): what a "dltensor_versioned"
// capsule points to. DLTensor itself is unchanged since 0.6, so only these are missing.
/// DLPack's ABI version of a versioned tensor.
struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
/// A tensor with its version, flags and the producer's deleter.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#endif

namespace vgpu::python {
/// The DLPack version vgpu exports versioned capsules as, and the newest major it imports.
inline constexpr DLPackVersion kDlpackVersion{1, 0};
}  // namespace vgpu::python
