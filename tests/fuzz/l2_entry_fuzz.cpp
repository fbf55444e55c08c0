// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/l2_entry_fuzz.cpp — vgpu-fuzz-l2-entry: arbitrary bytes as an L2 entry file, through
// DiskStore::load (header, identity, size, checksum and payload checks) and DiskStore::list(true)
// (the `vgpu-probe cache verify` path). docs/fuzzing.md.
//
// Input: one flag byte, then the entry file's bytes. The fuzzer cannot invert xxHash, so
//   bit 0  reseals the file first: the fingerprint hash, payload checksum and header checksum
//          are recomputed where the layout allows, so the checks behind them are reached;
//   bit 1  also sets the payload size to what the file holds;
//   bit 2  loads with the header's own fingerprint text (else one it cannot match).
// The kind and key asked for are the header's own (so the identity checks can pass), with
// spirv and a fixed key when the file is too short to hold them.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"
#include "vgpu/version.hpp"

namespace {

namespace fs = std::filesystem;
using vgpu::cache::DiskStore;
using vgpu::cache::EntryKind;

std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void put64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, 8); }

std::uint64_t hash(const std::uint8_t* p, std::size_t n) {
  return vgpu::cache::hash64(std::string_view(reinterpret_cast<const char*>(p), n));
}

/// A private store directory for this process, removed at exit.
struct Store {
  fs::path root;
  DiskStore* store = nullptr;
  Store() {
    std::string pattern = (fs::temp_directory_path() / "vgpu-fuzz-l2-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    root = pattern;
    vgpu::cache::DiskStoreOptions o;
    o.directory = root;
    store = new DiskStore(o);
    if (!store->enabled()) std::abort();
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(instance().root, ec);
    });
  }
  static Store& instance() {
    static Store s;
    return s;
  }
};

// Format 2 (docs/cache-format.md): 44 bytes, the fingerprint text (F), the label length (u32)
// and the label (L), then 32 bytes of payload size, payload checksum, cost_us, header checksum.
void reseal(std::vector<std::uint8_t>& b, bool fix_size) {
  if (b.size() < 44) return;
  const std::uint64_t text = get32(b.data() + 40);
  if (text > 65536 || b.size() < 48 + text) return;
  const std::uint64_t label = get32(b.data() + 44 + text);
  if (label > vgpu::cache::kMaxLabelBytes || b.size() < 80 + text + label) return;
  const std::uint64_t suffix_at = 48 + text + label;
  std::uint8_t* suffix = b.data() + suffix_at;
  put64(b.data() + 32, hash(b.data() + 44, text));
  const std::uint64_t body = b.size() - suffix_at - 32;
  if (fix_size) put64(suffix, body);
  const std::uint64_t declared = get64(suffix);
  put64(suffix + 8, hash(suffix + 32, static_cast<std::size_t>(declared < body ? declared : body)));
  put64(suffix + 24, hash(b.data(), suffix_at + 24));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Store& s = Store::instance();
  const std::uint8_t flags = data[0];
  std::vector<std::uint8_t> file(data + 1, data + size);
  if (flags & 1) reseal(file, (flags & 2) != 0);

  EntryKind kind = EntryKind::spirv;
  if (file.size() >= 16 && get32(file.data() + 12) >= 1 && get32(file.data() + 12) <= 5)
    kind = static_cast<EntryKind>(get32(file.data() + 12));
  vgpu::cache::KernelKey key{0x0123456789abcdefull, 0xfedcba9876543210ull};
  if (file.size() >= 32) key = {get64(file.data() + 16), get64(file.data() + 24)};
  vgpu::DeviceFingerprint fp{"backend=fuzz", vgpu::cache::hash64("backend=fuzz")};
  if ((flags & 4) && file.size() >= 44) {
    const std::uint64_t text = get32(file.data() + 40);
    if (text <= 65536 && file.size() >= 44 + text) {
      fp.text.assign(reinterpret_cast<const char*>(file.data() + 44), text);
      fp.hash = vgpu::cache::hash64(fp.text);
    }
  }

  const fs::path dir =
      s.root / ("v" + std::to_string(vgpu::kCacheFormatVersion)) / std::string(vgpu::cache::to_string(kind));
  fs::create_directories(dir);
  const fs::path path = dir / (key.hex() + ".vgc");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  }
  for (const auto& e : s.store->list(true))
    if (e.valid != e.problem.empty()) std::abort();  // an entry is valid exactly when it has no problem
  const auto payload = s.store->load(kind, key, fp);
  if (payload && payload->size() > file.size()) std::abort();  // a payload never outgrows its file
  ::unlink(path.c_str());
  return 0;
}
