// SPDX-License-Identifier: Apache-2.0
// tests/cache/l2_writer_main.cpp — vgpu-l2-writer: a second process for the L2 store tests.
//
//   vgpu-l2-writer write <dir> <kind> <keyhex> <fingerprint> <payload-file> <cost_us>
//       stores the bytes of payload-file; exit 0 when store() returned true
//   vgpu-l2-writer read <dir> <kind> <keyhex> <fingerprint> <out-file>
//       loads the entry and writes its payload to out-file; exit 0 on a hit, 1 on a miss
//   vgpu-l2-writer global
//       uses DiskStore::global() (configured by the environment), prints "enabled=0|1", checks
//       that a disabled store's load/store are no-ops, then runs a small matmul on the default
//       device; exit 0 when all of that held
//
// Exit 2 on a usage error, 3 when a check failed.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/vgpu.hpp"

namespace {

using vgpu::cache::DiskStore;
using vgpu::cache::DiskStoreOptions;
using vgpu::cache::EntryKind;
using vgpu::cache::KernelKey;

std::optional<EntryKind> parse_kind(const std::string& name) {
  for (auto k : {EntryKind::spirv, EntryKind::vk_pipeline_cache, EntryKind::gl_program_binary, EntryKind::cuda_binary,
                 EntryKind::selection})
    if (vgpu::cache::to_string(k) == name) return k;
  return std::nullopt;
}

std::optional<KernelKey> parse_key(const std::string& hex) {
  if (hex.size() != 32) return std::nullopt;
  try {
    return KernelKey{std::stoull(hex.substr(0, 16), nullptr, 16), std::stoull(hex.substr(16), nullptr, 16)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

vgpu::DeviceFingerprint fingerprint(const std::string& text) {
  vgpu::DeviceFingerprint fp;
  fp.text = text;
  fp.hash = vgpu::cache::hash64(text);
  return fp;
}

int global_mode() {
  DiskStore& store = DiskStore::global();
  std::cout << "enabled=" << (store.enabled() ? 1 : 0) << std::endl;
  // A second store on the same unusable directory must not warn again.
  DiskStore again(DiskStoreOptions::from_env());
  if (again.enabled() != store.enabled()) return 3;
  if (!store.enabled()) {
    const std::vector<std::uint8_t> payload{1, 2, 3};
    const auto fp = fingerprint("global-mode");
    if (store.store(EntryKind::spirv, KernelKey{1, 2}, fp, payload, 10)) return 3;
    if (store.load(EntryKind::spirv, KernelKey{1, 2}, fp)) return 3;
    const auto s = store.stats();
    if (s.writes || s.hits || s.write_failures || !s.rejected.empty()) return 3;
  }
  // The device keeps working whatever the disk cache's state.
  vgpu::Cache cache;
  vgpu::Matrix a(2, 3, 1.0f), b(3, 2, 2.0f);
  for (int i = 0; i < 2; ++i) {
    const vgpu::Matrix c = cache.matmul(a, b);
    for (float v : c.data)
      if (v != 6.0f) return 3;
  }
  std::cout << "matmul=ok on " << cache.device().info().id() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "global") return global_mode();
    if (args.size() < 6) {
      std::cerr << "usage: see tests/cache/l2_writer_main.cpp\n";
      return 2;
    }
    const auto kind = parse_kind(args[2]);
    const auto key = parse_key(args[3]);
    if (!kind || !key) {
      std::cerr << "bad kind or key\n";
      return 2;
    }
    DiskStoreOptions options;
    options.directory = args[1];
    DiskStore store(options);
    const auto fp = fingerprint(args[4]);
    if (args[0] == "write" && args.size() == 7) {
      std::ifstream in(args[5], std::ios::binary);
      const std::vector<std::uint8_t> payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return store.store(*kind, *key, fp, payload, std::stoull(args[6])) ? 0 : 3;
    }
    if (args[0] == "read" && args.size() == 6) {
      const auto payload = store.load(*kind, *key, fp);
      if (!payload) return 1;
      std::ofstream out(args[5], std::ios::binary);
      out.write(reinterpret_cast<const char*>(payload->data()), static_cast<std::streamsize>(payload->size()));
      return out ? 0 : 3;
    }
    std::cerr << "unknown mode " << args[0] << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "vgpu-l2-writer: " << e.what() << "\n";
    return 3;
  }
}
