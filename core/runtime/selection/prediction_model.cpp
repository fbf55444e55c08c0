// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/prediction_model.cpp — the prediction model's costs, fit and JSON entry.
#include "prediction_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "selection_store.hpp"
#include "vgpu/error.hpp"
#include "vgpu/ops.hpp"
#include "vgpu/selection.hpp"

namespace vgpu::detail::model {
namespace {

using Json = nlohmann::ordered_json;

double work_of(const Shape& s) {
  double w = 1;
  for (auto d : s) w *= double(d);
  return w;
}

// Solves the n×n system a·x = b (n ≤ 3) by Gaussian elimination with partial pivoting; false
// when it is singular (a feature that does not vary, or two that vary together).
bool solve(std::array<std::array<double, 3>, 3> a, std::array<double, 3> b, int n, std::array<double, 3>& x) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (std::abs(a[p][c]) < 1e-12) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (int r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (int k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= a[r][k] * x[k];
    x[r] = s / a[r][r];
  }
  return true;
}

// Reads a finite, non-negative number field of o, or sets *why.
bool number(const Json& o, const char* name, double& out, std::string* why) {
  const auto it = o.find(name);
  if (it == o.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
    *why = std::string("field '") + name + "' is missing or not a finite non-negative number";
    return false;
  }
  out = it->get<double>();
  return true;
}

// Reads a shape field (1-3 dimensions, each 1..2^32), or sets *why.
bool shape(const Json& o, Shape& out, std::string* why) {
  const auto it = o.find("shape");
  if (it == o.end() || !it->is_array() || it->empty() || it->size() > 3) {
    *why = "field 'shape' is missing or not a list of 1-3 sizes";
    return false;
  }
  for (const Json& d : *it) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() == 0 || d.get<std::uint64_t>() > (1ull << 32)) {
      *why = "a shape holds a size that is not an integer in 1..2^32";
      return false;
    }
    out.push_back(d.get<std::uint64_t>());
  }
  return true;
}

bool exact_keys(const Json& o, std::initializer_list<const char*> keys, std::string* why, const char* what) {
  if (!o.is_object() || o.size() != keys.size()) {
    *why = std::string(what) + " is not an object with exactly its fields";
    return false;
  }
  for (const char* k : keys)
    if (!o.contains(k)) {
      *why = std::string(what) + " lacks field '" + k + "'";
      return false;
    }
  return true;
}

// Whether checks untrust a model whose largest probe did largest work.
bool trusted_by(const std::vector<Check>& checks, double largest) {
  for (const Check& c : checks) {
    const double r = std::max(c.predicted / c.measured, c.measured / c.predicted);
    if (c.work >= largest && !(r <= kTrustFactor)) return false;
  }
  return true;
}

}  // namespace

OpCost op_cost(const std::string& op, const Shape& s) {
  const double f32 = 4;
  if (op == "matmul" && s.size() == 3) {
    const double m = double(s[0]), k = double(s[1]), n = double(s[2]);
    return {f32 * (m * k + k * n + m * n), 2 * m * k * n, true};
  }
  if (op == "axpy" && s.size() == 1)
    return {f32 * (3 * double(s[0]) + 1), 2 * double(s[0]), true};  // a, x, y up; y down
  if ((op == "add" || op == "mul") && s.size() == 1) return {f32 * 3 * double(s[0]), double(s[0]), true};
  if (op == "reduce_sum" && s.size() == 1) return {f32 * (double(s[0]) + 1), double(s[0]), true};
  if (op == "softmax_rows" && s.size() == 2) {
    const double e = double(s[0]) * double(s[1]);
    return {f32 * 2 * e, 5 * e, true};  // max, subtract, exp, sum, divide
  }
  return {0, double(selection_work(op, s)), false};
}

double Model::largest_probe_work() const {
  double w = 0;
  for (const Point& p : probes) w = std::max(w, work_of(p.shape));
  return w;
}

void Model::record_check(const Shape& shape, double predicted, double measured) {
  checks.push_back(Check{shape, work_of(shape), predicted, measured});
  if (checks.size() > kMaxPoints) checks.erase(checks.begin());
  // Once untrusted, it stays so (a model off by 14x once cannot be relied on to exclude).
  trusted = trusted && trusted_by({checks.back()}, largest_probe_work());
}

Model fit(std::vector<Point> points) {
  if (points.size() < 2)
    fail(ErrorCategory::invalid_argument, "a prediction model needs at least two probe points.",
         "time the device at two or more sizes before fitting.");
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  bool any_bytes = false;
  for (const Point& p : points) {
    if (!(p.seconds > 0) || !std::isfinite(p.seconds))
      fail(ErrorCategory::invalid_argument, "a prediction model's probe took " + std::to_string(p.seconds) + " s.",
           "pass the positive median seconds of each probe.");
    any_bytes = any_bytes || p.bytes > 0;
    if (p.bytes > 0) {
      lo = std::min(lo, p.flops / p.bytes);
      hi = std::max(hi, p.flops / p.bytes);
    }
  }
  // Columns: fixed, bytes, flops; a column the points cannot separate from another is left out.
  std::array<bool, 3> usable{true, any_bytes, !any_bytes || hi > 1.5 * lo};
  // Rows in relative error (each divided by its time), columns scaled to at most 1 so the
  // normal equations stay well conditioned across 10 decades of bytes and flops.
  std::array<double, 3> scale{1, 0, 0};
  for (const Point& p : points) {
    scale[1] = std::max(scale[1], p.bytes / p.seconds);
    scale[2] = std::max(scale[2], p.flops / p.seconds);
  }
  scale[0] = 0;
  for (const Point& p : points) scale[0] = std::max(scale[0], 1 / p.seconds);
  auto row = [&](const Point& p) {
    return std::array<double, 3>{1 / p.seconds / scale[0], scale[1] > 0 ? p.bytes / p.seconds / scale[1] : 0,
                                 scale[2] > 0 ? p.flops / p.seconds / scale[2] : 0};
  };
  // Non-negative least squares by trying every subset of the usable columns (at most 7): the
  // best subset whose unconstrained solution is non-negative is the constrained optimum.
  double best_err = std::numeric_limits<double>::infinity();
  std::array<double, 3> best{0, 0, 0};
  for (int mask = 1; mask < 8; ++mask) {
    std::array<int, 3> cols{};
    int n = 0;
    bool ok = true;
    for (int c = 0; c < 3; ++c)
      if (mask & (1 << c)) {
        ok = ok && usable[c];
        cols[n++] = c;
      }
    if (!ok) continue;
    std::array<std::array<double, 3>, 3> ata{};
    std::array<double, 3> atb{}, x{};
    for (const Point& p : points) {
      const auto r = row(p);
      for (int i = 0; i < n; ++i) {
        atb[i] += r[cols[i]];
        for (int j = 0; j < n; ++j) ata[i][j] += r[cols[i]] * r[cols[j]];
      }
    }
    if (!solve(ata, atb, n, x)) continue;
    std::array<double, 3> coef{0, 0, 0};
    for (int i = 0; i < n; ++i) coef[cols[i]] = x[i];
    if (std::any_of(coef.begin(), coef.end(), [](double v) { return v < 0; })) continue;
    double err = 0;
    for (const Point& p : points) {
      const auto r = row(p);
      const double e = r[0] * coef[0] + r[1] * coef[1] + r[2] * coef[2] - 1;
      err += e * e;
    }
    if (err < best_err * (1 - 1e-12)) {
      best_err = err;
      best = coef;
    }
  }
  Model m;
  m.fixed_s = best[0] / scale[0];
  m.s_per_byte = scale[1] > 0 ? best[1] / scale[1] : 0;
  m.s_per_flop = scale[2] > 0 ? best[2] / scale[2] : 0;
  m.probes = std::move(points);
  if (m.probes.size() > kMaxPoints) m.probes.erase(m.probes.begin(), m.probes.end() - kMaxPoints);
  return m;
}

std::string key_text(const std::string& op, const DeviceInfo& device) {
  return "model;v=1;op=" + op + ";device=" + device.id() + "=" + device.fingerprint.hex();
}

std::string to_json(const Model& m) {
  Json probes = Json::array(), checks = Json::array();
  for (const Point& p : m.probes)
    probes.push_back({{"shape", p.shape}, {"bytes", p.bytes}, {"flops", p.flops}, {"seconds", p.seconds}});
  for (const Check& c : m.checks)
    checks.push_back({{"shape", c.shape}, {"predicted", c.predicted}, {"measured", c.measured}});
  const Json j = {{"v", 1},
                  {"op", m.op},
                  {"device", m.device},
                  {"fixed_s", m.fixed_s},
                  {"s_per_byte", m.s_per_byte},
                  {"s_per_flop", m.s_per_flop},
                  {"probes", probes},
                  {"checks", checks},
                  {"trusted", m.trusted}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);  // never throws on bytes
}

std::optional<Model> from_json(std::string_view text, const std::string& op, const std::string& device,
                               std::string* why) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    *why = "not JSON";
    return std::nullopt;
  }
  if (!exact_keys(j, {"v", "op", "device", "fixed_s", "s_per_byte", "s_per_flop", "probes", "checks", "trusted"}, why,
                  "the model"))
    return std::nullopt;
  if (!j["v"].is_number_unsigned() || j["v"].get<std::uint64_t>() != 1) {
    *why = "version is not 1";
    return std::nullopt;
  }
  if (!j["op"].is_string() || j["op"].get<std::string>() != op || !j["device"].is_string() ||
      j["device"].get<std::string>() != device) {
    *why = "it names another op or device than its key";
    return std::nullopt;
  }
  Model m;
  m.op = op;
  m.device = device;
  if (!number(j, "fixed_s", m.fixed_s, why) || !number(j, "s_per_byte", m.s_per_byte, why) ||
      !number(j, "s_per_flop", m.s_per_flop, why))
    return std::nullopt;
  const Json &probes = j["probes"], &checks = j["checks"];
  if (!probes.is_array() || probes.size() < 2 || probes.size() > kMaxPoints || !checks.is_array() ||
      checks.size() > kMaxPoints) {
    *why = "probes (2-16) or checks (0-16) are not lists of that length";
    return std::nullopt;
  }
  for (const Json& p : probes) {
    Point pt;
    if (!exact_keys(p, {"shape", "bytes", "flops", "seconds"}, why, "a probe") || !shape(p, pt.shape, why) ||
        !number(p, "bytes", pt.bytes, why) || !number(p, "flops", pt.flops, why) ||
        !number(p, "seconds", pt.seconds, why))
      return std::nullopt;
    if (!(pt.seconds > 0)) {
      *why = "a probe took no time";
      return std::nullopt;
    }
    m.probes.push_back(std::move(pt));
  }
  for (const Json& c : checks) {
    Check ck;
    if (!exact_keys(c, {"shape", "predicted", "measured"}, why, "a check") || !shape(c, ck.shape, why) ||
        !number(c, "predicted", ck.predicted, why) || !number(c, "measured", ck.measured, why))
      return std::nullopt;
    if (!(ck.predicted > 0) || !(ck.measured > 0)) {
      *why = "a check holds a zero time";
      return std::nullopt;
    }
    ck.work = work_of(ck.shape);
    m.checks.push_back(std::move(ck));
  }
  if (!j["trusted"].is_boolean()) {
    *why = "field 'trusted' is not true or false";
    return std::nullopt;
  }
  m.trusted = j["trusted"].get<bool>();
  // A hand edit cannot re-trust a model its own checks untrusted.
  if (m.trusted && !trusted_by(m.checks, m.largest_probe_work())) {
    *why = "it says trusted, but a check was off by more than 2x";
    return std::nullopt;
  }
  return m;
}

std::optional<Model> load(cache::DiskStore& store, const std::string& op, const DeviceInfo& device) {
  const std::string key = key_text(op, device);
  return load_record(
      store, key, [&](std::string_view text, std::string& why) { return from_json(text, op, device.id(), &why); },
      [&](const std::string& why) {
        return "selection cache: ignoring the stored prediction model of '" + op + "' on " + device.id() + " (" + why +
               "); probing again.";
      });
}

void store(cache::DiskStore& store, const DeviceInfo& device, const Model& m) {
  store_selection_text(store, key_text(m.op, device), to_json(m), 0);
}

}  // namespace vgpu::detail::model
