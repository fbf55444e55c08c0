// SPDX-License-Identifier: Apache-2.0
// tools/probe/select_command.cpp — `vgpu-probe select OP SIZE [--json]`.
#include "select_command.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "builtin_plans.hpp"  // the runtime's: the tuner a device's plans use
#include "report.hpp"
#include "vgpu/backend/op_tuning.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/runtime.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::probe {
namespace {

struct SelectOptions {
  std::string op, size;
  bool json = false;
  bool recalibrate = false;          // measure every device again and store the result
  std::vector<std::string> devices;  // --device: the candidates (empty: every device)
};

/// Returns the environment's runtime options restricted to the devices ids names, through the
/// library's own restrictions (no selection of the probe's own): the backends of those devices
/// (RuntimeOptions::allowed, as VGPU_BACKEND) when they are every device of their backends,
/// else one device forced (RuntimeOptions::forced_device, as VGPU_DEVICE). Throws ArgumentError
/// (exit 2) for an id that names no device here, or several that are not whole backends.
RuntimeOptions restricted_options(const std::vector<std::string>& ids) {
  RuntimeOptions options = RuntimeOptions::from_env();
  Runtime probe(read_only_options());
  const std::vector<DeviceInfo> all = probe.devices();
  const std::vector<DeviceInfo> chosen = filter_devices(all, ids);
  std::vector<BackendKind> backends;
  for (const DeviceInfo& d : chosen)
    if (std::find(backends.begin(), backends.end(), d.backend) == backends.end()) backends.push_back(d.backend);
  std::string missing;  // devices of those backends that were not named
  for (const DeviceInfo& d : all)
    if (std::find(backends.begin(), backends.end(), d.backend) != backends.end() &&
        std::find_if(chosen.begin(), chosen.end(), [&](const DeviceInfo& c) { return c.id() == d.id(); }) ==
            chosen.end())
      missing += (missing.empty() ? "" : ", ") + d.id();
  options.forced_device.clear();  // the command line is more specific than VGPU_DEVICE
  if (missing.empty()) {
    options.allowed = backends;
  } else if (chosen.size() == 1) {
    options.forced_device = chosen.front().id();
  } else {
    try {
      fail(ErrorCategory::invalid_argument,
           "select --device can restrict the candidates to whole backends, or force one device; the ids given "
           "leave out " +
               missing + " of their backends.",
           "add " + missing + " to --device, or give one device (it is then forced, as VGPU_DEVICE does).");
    } catch (const vgpu::Error& e) {
      throw ArgumentError(e);
    }
  }
  return options;
}

/// Parses one dimension ("1024", "1e6"); throws invalid_argument.
std::uint64_t parse_dim(const std::string& text, const std::string& whole) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v >= 1) || v > 1e15 || std::floor(v) != v)
    fail(ErrorCategory::invalid_argument, "size '" + whole + "' has '" + text + "', which is not a whole number ≥ 1.",
         "write the size as N (e.g. 1024 or 1e6) or as dimensions joined by x (e.g. 64x128x32).");
  return static_cast<std::uint64_t>(v);
}

nlohmann::ordered_json to_json(const Selection& s) {
  nlohmann::ordered_json cands = nlohmann::ordered_json::array();
  for (const auto& c : s.candidates)
    cands.push_back({{"device", c.device},
                     {"eligible", c.eligible},
                     {"seconds", c.seconds},
                     {"device_seconds", c.device_seconds},
                     {"runs", c.runs},
                     {"demoted", c.demoted},
                     {"note", c.note},
                     {"check", to_string(c.check)},
                     {"check_error", c.check_error}});
  nlohmann::ordered_json j = json_document();
  j["op"] = s.op;
  j["shape"] = s.shape;
  j["size_class"] = s.size_class;
  j["device"] = s.device;
  j["source"] = to_string(s.source);
  j["calibration_shape"] = s.calibration_shape;
  j["calibration_seconds"] = s.calibration_seconds;
  j["lookup_seconds"] = s.lookup_seconds;
  j["candidates"] = std::move(cands);
  return j;
}

/// The variant (matmul tiling) the selected device runs, the candidates its backend offered,
/// and where the choice came from.
struct VariantShown {
  std::string chosen;
  std::vector<std::string> candidates;
  std::string source;  // "measured now", "loaded from the cache", "this process's" or "rule"
};

/// Plans matmul on the selected device (which measures or loads the variant choice, as a call
/// would) and names the variant it runs; nothing for other ops or an unnamed variant.
std::optional<VariantShown> show_variant(Runtime& runtime, const Selection& s) {
  if (s.op != "matmul" || s.shape.size() != 3) return std::nullopt;
  Device dev = runtime.open(s.device);
  const DeviceInfo& info = dev.info();
  const std::shared_ptr<const OpTuner> tuner = detail::op_tuner_of(dev);
  if (!tuner) return std::nullopt;
  const OpShape shape{"matmul", s.shape[0], s.shape[1], s.shape[2]};
  const std::vector<OpTuning> cands = tuner->candidates(shape, info);
  const CounterSnapshot before = dev.counters();
  const KernelPlan plan = ops::matmul(dev, static_cast<std::uint32_t>(s.shape[0]),
                                      static_cast<std::uint32_t>(s.shape[1]), static_cast<std::uint32_t>(s.shape[2]));
  const CounterSnapshot delta = dev.counters() - before;
  VariantShown v;
  for (const OpTuning& c : cands) {
    v.candidates.push_back(c.variant);
    if (c.options.defines == plan.options.defines && c.options.workgroup_size == plan.options.workgroup_size)
      v.chosen = c.variant;
  }
  if (v.chosen.empty()) return std::nullopt;
  v.source = cands.size() < 2               ? "rule"
             : delta.variant_measurements   ? "measured now"
             : delta.variant_loads          ? "loaded from the cache"
             : v.chosen == cands[0].variant ? "rule or this process's choice"
                                            : "this process's choice";
  return v;
}

int run_select(const SelectOptions& o) {
  const Shape shape = parse_size(o.op, o.size);
  // --device: a runtime of its own over those devices; its selections are keyed by that device
  // set, so they never stand in for the whole machine's.
  std::unique_ptr<Runtime> restricted =
      o.devices.empty() ? nullptr : std::make_unique<Runtime>(restricted_options(o.devices));
  Runtime& runtime = restricted ? *restricted : Runtime::global();
  const Selection s = o.recalibrate ? runtime.recalibrate(o.op, shape) : runtime.explain(o.op, shape);
  const std::optional<VariantShown> v = show_variant(runtime, s);
  if (o.json) {
    nlohmann::ordered_json j = to_json(s);
    if (v) j["variant"] = {{"chosen", v->chosen}, {"candidates", v->candidates}, {"source", v->source}};
    std::cout << json_text(j) << "\n";
  } else {
    std::cout << s.describe();
    if (v) {
      std::string all;
      for (const auto& c : v->candidates) all += (all.empty() ? "" : ", ") + c;
      std::cout << "variant on " << s.device << ": " << v->chosen << " (" << v->source << "; candidates: " << all
                << ")\n";
    }
  }
  return 0;
}

}  // namespace

Shape parse_size(const std::string& op, const std::string& size) {
  Shape shape;
  std::stringstream ss(size);
  std::string part;
  while (std::getline(ss, part, 'x')) shape.push_back(parse_dim(part, size));
  // getline drops a trailing empty part ("64x"): every 'x' must separate two numbers.
  if (shape.size() != static_cast<std::size_t>(std::count(size.begin(), size.end(), 'x')) + 1)
    parse_dim("", size);  // throws with the hint
  if (shape.size() == 1 && op == "matmul") shape = {shape[0], shape[0], shape[0]};
  if (shape.size() == 1 && op == "softmax_rows") shape = {shape[0], shape[0]};
  return shape;
}

void add_select_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<SelectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "select",
      "Show the device vgpu selects for OP at SIZE and why: measured on first use (every eligible device "
      "timed with transfers), then persisted next to the kernel cache; for matmul also the variant (tiling) "
      "that device runs and the candidates it was measured among (VGPU_TUNE)");
  cmd->add_option("OP", o->op, "matmul, axpy, add, mul, reduce_sum or softmax_rows")->required();
  cmd->add_option("SIZE", o->size,
                  "N (matmul: N×N×N, softmax_rows: N×N, others: N elements; 1e6 allowed) or dimensions "
                  "joined by x (matmul MxKxN, softmax_rows ROWSxCOLS)")
      ->required();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  add_device_option(*cmd, o->devices,
                    "the candidates (whole backends, as VGPU_BACKEND restricts them; or one device, forced as by "
                    "VGPU_DEVICE)");
  cmd->add_flag("--recalibrate", o->recalibrate,
                "Measure every device again (the stored choice kept where it is within 1.10 of the best) and store the "
                "result, instead of reading the stored choice");
  cmd->callback([&action, &app, o] {
    action = [&app, o] {
      o->json = o->json || json_requested(app);
      return run_select(*o);
    };
  });
}

}  // namespace vgpu::probe
