// SPDX-License-Identifier: Apache-2.0
// fallback/cpu/kernels/simd.hpp — helpers every built-in CPU kernel shares, templated on the
// xsimd architecture type.
//
// Why everything here is a member of a class template on Arch: the kernels are compiled once
// per ISA in separate translation units (kernels_sse2.cpp, kernels_avx2.cpp, …) with different
// -m flags. An ordinary inline function defined in a header would be emitted by each of those
// TUs under one mangled name, and the linker keeps an arbitrary copy — possibly the AVX-512
// one, which then crashes on an SSE2-only CPU. Templating on Arch gives every ISA its own
// symbols, so no code compiled for one ISA can leak into another. For the same reason the
// kernels avoid out-of-line std:: helpers (std::min, std::max on floats) in favour of these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>

#include <xsimd/xsimd.hpp>
// xsimd 8 (Debian 12) and 12+ (Debian 13: 13.2) differ in a few names; the helpers below pick
// by XSIMD_VERSION_MAJOR, so the kernels spell each operation once.
#ifndef XSIMD_VERSION_MAJOR
#error "fallback/cpu/kernels/simd.hpp: xsimd without XSIMD_VERSION_MAJOR. Fix: install xsimd 8 or 12+ (libxsimd-dev)."
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "vgpu/platform/thread_exit_slot.hpp"
#include "kernels/portable_batch.hpp"
#include "vgpu/kernel_source.hpp"

namespace vgpu::cpu::builtin {

/// The float vector type of Arch: xsimd's batch, or the portable set's own.
template <class Arch>
struct BatchOf {
  using type = xsimd::batch<float, Arch>;
};
template <>
struct BatchOf<PortableArch> {
  using type = PortableBatch;
};

/// SIMD vocabulary for one architecture: the float batch and small helpers around it.
template <class Arch>
struct Simd {
  using V = typename BatchOf<Arch>::type;
  static constexpr std::size_t W = V::size;  ///< float lanes per vector
  static constexpr bool kPortable = std::is_same_v<Arch, PortableArch>;

  /// Returns a*b + c, fused where the ISA has FMA (xsimd 8.1 lacks a native AVX-512 fma,
  /// and its generic fallback would round twice).
  static V fmadd(const V& a, const V& b, const V& c) noexcept {
    if constexpr (kPortable) {
      return V::fma(a, b, c);
#if defined(__AVX512F__)
    } else if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
      return V(_mm512_fmadd_ps(a, b, c));
#endif
    } else {
      return xsimd::fma(a, b, c);
    }
  }

  /// Returns the larger of a and b per lane.
  static V max(const V& a, const V& b) noexcept {
    if constexpr (kPortable)
      return V::max(a, b);
    else
      return xsimd::max(a, b);
  }

  /// Returns e^x per lane.
  static V exp(const V& x) noexcept {
    if constexpr (kPortable)
      return V::exp(x);
    else
      return xsimd::exp(x);
  }

  /// Returns the sum of v's lanes, a log2(W) tree (xsimd 8: hadd; 9 renamed it reduce_add
  /// and 12 dropped hadd).
  static float hsum(const V& v) noexcept {
    if constexpr (kPortable) {
      return v.sum();
    } else {
#if XSIMD_VERSION_MAJOR >= 9
      return xsimd::reduce_add(v);
#else
      return xsimd::hadd(v);
#endif
    }
  }

  /// Returns the largest lane of v (xsimd 8.1 has no reduce_max).
  static float hmax(const V& v) noexcept {
    alignas(64) float lanes[W];
    v.store_aligned(lanes);
    float m = lanes[0];
    for (std::size_t i = 1; i < W; ++i) m = lanes[i] > m ? lanes[i] : m;
    return m;
  }

  /// Returns the smaller of two sizes (kept here rather than std::min: see file comment).
  static constexpr std::uint64_t min(std::uint64_t a, std::uint64_t b) noexcept { return a < b ? a : b; }

  /// Returns ceil(a / b) for b > 0.
  static constexpr std::uint64_t div_up(std::uint64_t a, std::uint64_t b) noexcept { return (a + b - 1) / b; }

  /// Returns the linear group index g = x + y*nx + z*nx*ny that the built-in plans use to
  /// spread one long range of chunks over a 2-D or 3-D grid.
  static std::uint64_t linear_group(const CpuWorkgroup& wg) noexcept {
    const std::uint64_t nx = wg.num_workgroups[0], ny = wg.num_workgroups[1];
    return wg.workgroup_id[0] + nx * (wg.workgroup_id[1] + ny * std::uint64_t{wg.workgroup_id[2]});
  }
};

/// A per-thread, 64-byte-aligned float scratch area that grows on demand and is reused by
/// every later kernel call on that thread, so the hot path never allocates. One instance per
/// (Arch, Tag) so kernels do not share (and clobber) each other's scratch. The buffer is freed
/// when its thread exits, through a platform::ThreadExitSlot rather than a thread_local object
/// with a destructor (which MinGW-w64 runs after freeing the object's storage; see there).
template <class Arch, class Tag>
struct Scratch {
  /// Returns at least `floats` floats of this thread's scratch; throws std::bad_alloc.
  static float* get(std::size_t floats) {
    // Leaked: threads may still exit (and run the slot's destructor) during static destruction.
    static const platform::ThreadExitSlot& slot = *new platform::ThreadExitSlot(&Holder::destroy);
    auto* holder = static_cast<Holder*>(slot.get());
    if (holder == nullptr) {
      holder = new Holder();
      slot.set(holder);
    }
    if (holder->capacity < floats) {
      void* fresh = ::operator new (floats * sizeof(float), std::align_val_t{64});
      holder->release();
      holder->data = static_cast<float*>(fresh);
      holder->capacity = floats;
    }
    return holder->data;
  }

 private:
  struct Holder {
    float* data = nullptr;
    std::size_t capacity = 0;
    /// Frees the buffer (on growth and at thread exit).
    void release() noexcept {
      if (data) ::operator delete (data, std::align_val_t{64});
      data = nullptr;
      capacity = 0;
    }
    /// The slot's destructor: runs at the exit of a thread that has a Holder.
    static void destroy(void* holder) noexcept {
      auto* h = static_cast<Holder*>(holder);
      h->release();
      delete h;
    }
  };
};

}  // namespace vgpu::cpu::builtin
