// SPDX-License-Identifier: Apache-2.0
// core/runtime/features/feature_check.cpp — capability truth tests (vgpu/feature_check.hpp):
// running a feature's probe on a device, the verdict memoised per device fingerprint and stored
// in L2 as a measurement record, and the compile path's refusal of a feature found wrong.
#include "vgpu/feature_check.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "device_core.hpp"
#include "feature_gate.hpp"
#include "feature_probes.hpp"
#include "selection_store.hpp"
#include "vgpu/error.hpp"
#include "vgpu/kernels/kernel_abi.hpp"
#include "vgpu/log.hpp"

namespace vgpu {

const char* to_string(FeatureVerdict verdict) noexcept {
  switch (verdict) {
    case FeatureVerdict::passed:
      return "passed";
    case FeatureVerdict::wrong:
      return "wrong";
    case FeatureVerdict::failed:
      return "failed";
  }
  return "failed";
}

std::vector<std::string> probed_features() {
  std::vector<std::string> out;
  for (const auto& p : detail::feature_probes()) out.emplace_back(p.feature);
  return out;
}

namespace detail {
namespace {

// The verdicts this process knows, by key text (device fingerprint and probe version inside).
struct Memo {
  std::mutex mutex;
  std::map<std::string, FeatureCheck> checks;
};
Memo& memo() {
  static auto* m = new Memo;  // leaked: a late compile on a background thread may ask (exit_order.hpp)
  return *m;
}

std::string key_text(const DeviceInfo& info, const FeatureProbe& p) {
  return "feature-check;v=1;feature=" + std::string(p.feature) + ";probe=" + std::to_string(p.version) +
         ";device=" + info.id() + "=" + info.fingerprint.hex();
}

// Runs p on core's device: inputs written, outputs poisoned, one dispatch, read back, compared.
FeatureCheck run_probe(DeviceCore& core, const FeatureProbe& p) {
  FeatureCheck c;
  c.feature = std::string(p.feature);
  const std::uint32_t n = kFeatureProbeElements;
  try {
    KernelSource s;
    s.name = "vgpu.feature_probe." + c.feature;
    s.add_glsl(std::string(p.glsl));
    s.add_cpu(p.cpu, std::to_string(p.version));
    s.params_size = 16;
    const std::uint32_t in_size = p.in_size, out_size = p.out_size;
    s.bindings = {
        BindingDecl{0, Access::read, "in",
                    [in_size](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                      return std::uint64_t{pb.as<std::uint32_t>()} * in_size;
                    }},
        BindingDecl{1, Access::write, "out", [out_size](const ParamsBlock& pb, const Groups&) -> std::uint64_t {
                      return std::uint64_t{pb.as<std::uint32_t>()} * out_size;
                    }}};
    CompileOptions o;
    o.workgroup_size = {kFeatureProbeGroup, 1, 1};
    const Kernel k = core.compile_unchecked(s, o);
    const std::vector<unsigned char> in = p.input(n), want = p.expected(in, n);
    std::vector<unsigned char> poison(want.size(), 0xA5), got(want.size());
    const Buffer bin = core.create_buffer(in.size(), true), bout = core.create_buffer(want.size(), true);
    core.write(bin, in.data(), in.size(), 0);
    core.write(bout, poison.data(), poison.size(), 0);
    const Binding bindings[] = {{0, bin}, {1, bout}};
    const BindingSet set = core.bind(k, bindings);
    core.dispatch(k, set, ParamsBlock::of(kernels::ElementwiseParams{n, 0, 0, 0}),
                  Groups{n / kFeatureProbeGroup, 1, 1});
    core.synchronize(core.timeout());
    core.read(bout, got.data(), got.size(), 0);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < want.size(); i += out_size)
      if (std::memcmp(&got[i], &want[i], out_size) != 0 && bad++ == 0) first = i / out_size;
    if (bad != 0) {
      c.verdict = FeatureVerdict::wrong;
      c.note = std::to_string(bad) + " of " + std::to_string(n) + " results differ from the expected ones (first at [" +
               std::to_string(first) + "])";
    }
  } catch (const Error& e) {
    if (e.category() == ErrorCategory::device_lost || e.category() == ErrorCategory::timeout) throw;
    c.verdict = FeatureVerdict::failed;
    c.note = e.problem();
  }
  return c;
}

// The stored record of a verdict, or why it cannot be trusted.
std::optional<FeatureCheck> from_json(std::string_view text, const std::string& key, const FeatureProbe& p,
                                      std::string& why) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || j["key"] != key || !j.contains("verdict") ||
      !j["verdict"].is_string() || !j.contains("note") || !j["note"].is_string() || !j.contains("feature") ||
      j["feature"] != std::string(p.feature)) {
    why = "not a feature check of this device and probe";
    return std::nullopt;
  }
  FeatureCheck c;
  c.feature = std::string(p.feature);
  const std::string v = j["verdict"];
  if (v == "passed")
    c.verdict = FeatureVerdict::passed;
  else if (v == "wrong")
    c.verdict = FeatureVerdict::wrong;
  else {
    why = "verdict '" + v + "' is not one a store holds";
    return std::nullopt;
  }
  c.note = j["note"];
  c.stored = true;
  return c;
}

// The verdict of p on core's device: memo, else the L2 record, else the probe (then stored:
// passed and wrong are facts of the device and driver; a failure to run may be passing).
FeatureCheck verdict(DeviceCore& core, const FeatureProbe& p) {
  const std::string key = key_text(core.info(), p);
  Memo& m = memo();
  {
    std::lock_guard lock(m.mutex);
    if (auto it = m.checks.find(key); it != m.checks.end()) return it->second;
  }
  cache::DiskStore& store = core.l2_store();
  std::optional<FeatureCheck> c = load_record(
      store, key, [&](std::string_view text, std::string& why) { return from_json(text, key, p, why); },
      [&](const std::string& why) {
        return "feature checks: ignoring the stored verdict of " + std::string(p.feature) + " on " + core.info().id() +
               " (" + why + "); probing again";
      });
  if (!c) {
    c = run_probe(core, p);
    if (c->verdict != FeatureVerdict::failed)
      store_selection_text(
          store, key,
          nlohmann::json{{"key", key}, {"feature", c->feature}, {"verdict", to_string(c->verdict)}, {"note", c->note}}
              .dump(),
          1000);
  }
  FeatureCheck out;
  bool warn = false;
  {
    std::lock_guard lock(m.mutex);
    const auto [it, first] = m.checks.emplace(key, *c);  // a racing thread's verdict wins: the same facts
    out = it->second;
    warn = first && out.verdict != FeatureVerdict::passed;
  }
  // One warning per process, whether the verdict was probed now or read from the store (outside
  // the lock: a log sink is the application's code).
  if (warn)
    log(LogLevel::warn, core.info().id() + " advertises " + out.feature + ", but vgpu's truth test of it " +
                            (out.verdict == FeatureVerdict::wrong ? "computed wrong results" : "did not run") + " (" +
                            out.note + "): kernels that declare SPIR-V " + std::string(p.capability) +
                            " are refused there.");
  return out;
}

bool advertises(const DeviceInfo& info, std::string_view feature) {
  return std::find(info.features.begin(), info.features.end(), feature) != info.features.end();
}

}  // namespace

void check_kernel_features(DeviceCore& core, const KernelReflection& r, const std::string& kernel) {
  for (const FeatureProbe& p : feature_probes()) {
    if (std::find(r.capabilities.begin(), r.capabilities.end(), p.capability) == r.capabilities.end()) continue;
    if (!advertises(core.info(), p.feature)) continue;  // the backend refuses what its device lacks
    const FeatureCheck c = verdict(core, p);
    if (c.verdict == FeatureVerdict::passed) continue;
    fail(ErrorCategory::not_supported,
         "kernel '" + kernel + "' declares the SPIR-V capability " + std::string(p.capability) + ", and " +
             core.info().id() + " advertises its feature " + c.feature + ", but vgpu's truth test of it " +
             (c.verdict == FeatureVerdict::wrong ? "computed wrong results" : "did not run") + " there (" + c.note +
             ").",
         "run the kernel on another device (VGPU_DEVICE), or rewrite it without " + std::string(p.capability) +
             "; vgpu-probe --features shows each device's feature checks.");
  }
}

bool feature_usable(DeviceCore& core, std::string_view feature) {
  if (!advertises(core.info(), feature)) return false;
  for (const FeatureProbe& p : feature_probes())
    if (p.feature == feature) return verdict(core, p).verdict == FeatureVerdict::passed;
  return true;
}

}  // namespace detail

std::vector<FeatureCheck> check_features(const Device& device) {
  detail::DeviceCore& core = detail::DeviceAccess::core(device);
  std::vector<FeatureCheck> out;
  for (const detail::FeatureProbe& p : detail::feature_probes())
    if (detail::advertises(core.info(), p.feature)) out.push_back(detail::verdict(core, p));
  return out;
}

}  // namespace vgpu
