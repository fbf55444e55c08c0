// SPDX-License-Identifier: Apache-2.0
// vgpu/export.hpp — VGPU_API, the mark of everything a shared libvgpu exports.
//
// libvgpu is compiled with hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden),
// so only what carries VGPU_API is part of libvgpu.so's dynamic symbol table: the public API in
// this folder, never the layers below it, nlohmann or TBB's template instantiations. Every
// class and free function declared in an installed header (vgpu/*.hpp) gets VGPU_API
// (docs/embedding.md, "Symbol visibility"); a class must be exported whole whenever its
// typeinfo or vtable crosses the boundary (vgpu::Error: catch by type in the application).
//
// VGPU_BUILDING_LIBRARY is defined only while libvgpu's own sources compile; VGPU_STATIC_DEFINE
// by vgpu::vgpu's usage requirements in a static build (BUILD_SHARED_LIBS=OFF), where nothing
// is imported from a DLL.
#pragma once

#if defined(VGPU_STATIC_DEFINE)
#define VGPU_API
#elif defined(_WIN32) || defined(__CYGWIN__)
#if defined(VGPU_BUILDING_LIBRARY)
#define VGPU_API __declspec(dllexport)
#else
#define VGPU_API __declspec(dllimport)
#endif
#else
// ELF and Mach-O: default visibility both while building and while using the library.
#define VGPU_API __attribute__((visibility("default")))
#endif
