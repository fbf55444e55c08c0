// SPDX-License-Identifier: Apache-2.0
// cache/src/payload_check.cpp — the structural checks of L2 payloads that need no library:
// VkPipelineCache headers, GL program binaries, CUDA module images (SPIR-V: spirv_check.cpp).
#include "vgpu/cache/payload_check.hpp"

#include <cstring>

namespace vgpu::cache {
namespace {

std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

std::uint32_t get32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint64_t get64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(get32(p)) | (static_cast<std::uint64_t>(get32(p + 4)) << 32);
}

/// Whether [offset, offset + count * size) lies inside a file of file_bytes, without overflow.
bool inside(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t file_bytes) {
  if (offset > file_bytes) return false;
  const std::uint64_t room = file_bytes - offset;
  return size == 0 || count <= room / size;
}

// ELF64 constants (elf.h names; the header is not needed for these few).
constexpr std::uint16_t kEmCuda = 190;
constexpr std::uint32_t kShtNull = 0, kShtSymtab = 2, kShtStrtab = 3, kShtNobits = 8;
constexpr std::size_t kEhdrBytes = 64, kPhdrBytes = 56, kShdrBytes = 64, kSymBytes = 24;

std::string elf_problem(std::span<const std::uint8_t> image) {
  const std::uint64_t n = image.size();
  const std::uint8_t* p = image.data();
  if (n < kEhdrBytes) return "an ELF image of " + std::to_string(n) + " bytes is shorter than its 64-byte header";
  if (p[4] != 2 || p[5] != 1 || p[6] != 1) return "not a little-endian ELF64 image (version 1)";
  if (get16(p + 18) != kEmCuda) return "ELF machine " + std::to_string(get16(p + 18)) + " is not EM_CUDA (190)";
  if (get16(p + 52) != kEhdrBytes) return "the ELF header size is not 64";
  const std::uint64_t phoff = get64(p + 32), shoff = get64(p + 40);
  const std::uint16_t phentsize = get16(p + 54), phnum = get16(p + 56), shentsize = get16(p + 58),
                      shnum = get16(p + 60), shstrndx = get16(p + 62);
  if (phnum && (phentsize != kPhdrBytes || !inside(phoff, phnum, kPhdrBytes, n)))
    return "the ELF program headers do not lie inside the image";
  if (shnum && (shentsize != kShdrBytes || !inside(shoff, shnum, kShdrBytes, n)))
    return "the ELF section headers do not lie inside the image";
  if (shnum == 0 ? shstrndx != 0 : shstrndx >= shnum) return "the ELF section-name table index is out of range";
  for (std::uint16_t i = 0; i < phnum; ++i) {
    const std::uint8_t* ph = p + phoff + std::uint64_t{i} * kPhdrBytes;
    if (!inside(get64(ph + 8), 1, get64(ph + 32), n))
      return "ELF segment " + std::to_string(i) + " does not lie inside the image";
  }
  auto section = [&](std::uint32_t i) { return p + shoff + std::uint64_t{i} * kShdrBytes; };
  if (shstrndx != 0 && get32(section(shstrndx) + 4) != kShtStrtab)
    return "the ELF section-name table is not a string table";
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint8_t* sh = section(i);
    const std::uint32_t type = get32(sh + 4);
    const std::uint64_t offset = get64(sh + 24), size = get64(sh + 32);
    const std::string which = "ELF section " + std::to_string(i);
    if (type == kShtNull || type == kShtNobits) continue;
    if (!inside(offset, 1, size, n)) return which + " does not lie inside the image";
    if (type == kShtStrtab && size > 0 && p[offset + size - 1] != 0)
      return which + " (a string table) is not NUL-terminated";
    if (type == kShtSymtab && (get64(sh + 56) != kSymBytes || size % kSymBytes != 0 || get32(sh + 40) >= shnum))
      return which + " (a symbol table) has a bad entry size or string-table link";
    if (shstrndx != 0) {
      const std::uint8_t* names = section(shstrndx);
      if (get32(sh) >= get64(names + 32)) return which + "'s name lies outside the section-name table";
    }
  }
  return {};
}

}  // namespace

std::string pipeline_cache_problem(std::span<const std::uint8_t> blob, const PipelineCacheIdentity* device) {
  if (blob.size() < 32)
    return "VkPipelineCache data of " + std::to_string(blob.size()) + " bytes is shorter than its 32-byte header";
  const std::uint32_t header_size = get32(blob.data()), version = get32(blob.data() + 4);
  if (header_size != 32) return "the VkPipelineCache header size is " + std::to_string(header_size) + ", not 32";
  if (version != 1) return "the VkPipelineCache header version is " + std::to_string(version) + ", not 1";
  if (!device) return {};
  if (get32(blob.data() + 8) != device->vendor_id || get32(blob.data() + 12) != device->device_id)
    return "the VkPipelineCache data names another vendor or device id";
  if (std::memcmp(blob.data() + 16, device->uuid.data(), device->uuid.size()) != 0)
    return "the VkPipelineCache data names another pipelineCacheUUID";
  return {};
}

std::string cuda_image_problem(std::span<const std::uint8_t> image) {
  if (image.size() > 4 && image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F')
    return elf_problem(image);
  // The driver reads PTX up to its NUL; text without one would be read past the end.
  if (!image.empty() && image.back() == 0) return {};
  return "neither an ELF cubin nor NUL-terminated PTX";
}

std::string payload_problem(EntryKind kind, std::span<const std::uint8_t> payload) {
  switch (kind) {
    case EntryKind::spirv:
      return spirv_problem(payload);
    case EntryKind::vk_pipeline_cache:
      return pipeline_cache_problem(payload);
    case EntryKind::gl_program_binary:
      // [u32 binary format][glGetProgramBinary bytes]: the format is checked against the
      // context's list, the bytes by the driver (GL_LINK_STATUS), both in the OpenGL backend.
      return payload.size() > 4 ? std::string() : "a GL program binary needs a format word and at least one byte";
    case EntryKind::cuda_binary:
      return cuda_image_problem(payload);
    case EntryKind::selection:
      return {};  // JSON: the selection reader (core/runtime/selection/selection_json.cpp) checks every field
  }
  return "unknown entry kind";
}

}  // namespace vgpu::cache
