// SPDX-License-Identifier: Apache-2.0
// core/runtime/selection/selection_json.cpp — selections to and from JSON, with every field checked before
// it is converted (nlohmann's get<int>() on a float out of int's range is undefined behaviour).
#include "selection_json.hpp"

#include <climits>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace vgpu::detail {
namespace {

using nlohmann::json;

// 2: each candidate records its result check ("check", "check_error"; issue 29). Version 1
// records were chosen without checking results; they live under "select;v=2" keys, which this
// vgpu never looks up (selection_service.cpp), and are refused here like any other version.
constexpr std::uint64_t kPayloadVersion = 2;
constexpr std::size_t kMaxCandidates = 256, kMaxDims = 8;

/// Reads fields of one JSON object, remembering the first problem; each getter returns a
/// harmless value after a problem, so a reader can go on and check ok() once at the end.
class Fields {
 public:
  Fields(const json& object, std::string where, std::string& problem)
      : j_(object), where_(std::move(where)), problem_(problem) {
    if (!j_.is_object()) fail("is not a JSON object");
  }

  bool ok() const { return problem_.empty(); }

  /// An integer (no fraction, no exponent beyond it) in [min, max].
  std::uint64_t unsigned_in(const char* key, std::uint64_t min, std::uint64_t max) {
    const json* v = field(key);
    if (!v) return min;
    if (!v->is_number_unsigned()) return fail(key, "is not a non-negative integer"), min;
    const auto x = v->get<std::uint64_t>();
    if (x < min || x > max)
      return fail(key, "is " + std::to_string(x) + ", outside " + std::to_string(min) + ".." + std::to_string(max)),
             min;
    return x;
  }
  /// A finite number ≥ 0.
  double seconds(const char* key) {
    const json* v = field(key);
    if (!v) return 0;
    if (!v->is_number()) return fail(key, "is not a number"), 0;
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) return fail(key, "is not a finite number of seconds >= 0"), 0;
    return x;
  }
  /// A finite number ≥ 0 that is not a time.
  double non_negative(const char* key) {
    const json* v = field(key);
    if (!v) return 0;
    if (!v->is_number()) return fail(key, "is not a number"), 0;
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) return fail(key, "is not a finite number >= 0"), 0;
    return x;
  }
  std::string text(const char* key, bool non_empty) {
    const json* v = field(key);
    if (!v) return {};
    if (!v->is_string()) return fail(key, "is not a string"), std::string();
    std::string s = v->get<std::string>();
    if (non_empty && s.empty()) fail(key, "is empty");
    return s;
  }
  /// One of the names of ResultCheck.
  ResultCheck check(const char* key) {
    const std::string s = text(key, true);
    for (const ResultCheck c : {ResultCheck::unchecked, ResultCheck::passed, ResultCheck::wrong})
      if (s == to_string(c)) return c;
    if (ok()) fail(key, "is not \"unchecked\", \"passed\" or \"wrong\"");
    return ResultCheck::unchecked;
  }
  /// Records a problem of this object that no single field's type shows.
  void problem(const std::string& what) { fail(what); }
  bool boolean(const char* key) {
    const json* v = field(key);
    if (!v) return false;
    if (!v->is_boolean()) return fail(key, "is not true or false"), false;
    return v->get<bool>();
  }
  /// An array of 1..max_size elements.
  const json* array(const char* key, std::size_t max_size) {
    const json* v = field(key);
    if (!v) return nullptr;
    if (!v->is_array() || v->empty() || v->size() > max_size)
      return fail(key, "is not an array of 1 to " + std::to_string(max_size) + " elements"), nullptr;
    return v;
  }

 private:
  const json* field(const char* key) {
    if (!ok()) return nullptr;
    const auto it = j_.find(key);
    if (it == j_.end()) return fail(key, "is missing"), nullptr;
    return &*it;
  }
  void fail(const std::string& what) {
    if (ok()) problem_ = where_ + " " + what;
  }
  void fail(const char* key, const std::string& what) { fail("field \"" + std::string(key) + "\" " + what); }

  const json& j_;
  std::string where_;
  std::string& problem_;
};

}  // namespace

std::string selection_to_json(const Selection& s) {
  json cands = json::array();
  for (const auto& c : s.candidates) {
    cands.push_back({{"device", c.device},
                     {"eligible", c.eligible},
                     {"seconds", c.seconds},
                     {"runs", c.runs},
                     {"note", c.note},
                     {"check", to_string(c.check)},
                     {"check_error", c.check_error}});
    // Only where measured: a record without it reads as 0 (not timed), as before the field existed.
    if (c.device_seconds > 0) cands.back()["device_seconds"] = c.device_seconds;
  }
  const json j = {{"version", kPayloadVersion}, {"op", s.op},         {"calibration_shape", s.calibration_shape},
                  {"size_class", s.size_class}, {"device", s.device}, {"calibration_seconds", s.calibration_seconds},
                  {"candidates", cands}};
  // Notes carry device error text (a compile log can quote non-UTF-8 source): replaced, never a throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<Selection> selection_from_json(std::string_view text, std::string* why) {
  std::string problem;
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) problem = "the payload is not JSON";
  Selection s;
  if (problem.empty()) {
    Fields top(j, "the selection", problem);
    if (top.unsigned_in("version", 0, UINT64_MAX) != kPayloadVersion && top.ok())
      problem =
          "the selection has payload version " + j.at("version").dump() + ", not " + std::to_string(kPayloadVersion);
    s.op = top.text("op", true);
    if (const json* shape = top.array("calibration_shape", kMaxDims))
      for (std::size_t i = 0; i < shape->size() && problem.empty(); ++i) {
        const json& d = (*shape)[i];
        if (!d.is_number_unsigned() || d.get<std::uint64_t>() == 0)
          problem = "the selection's calibration_shape[" + std::to_string(i) + "] is not a positive integer";
        else
          s.calibration_shape.push_back(d.get<std::uint64_t>());
      }
    s.size_class = static_cast<std::uint32_t>(top.unsigned_in("size_class", 0, 64));
    s.device = top.text("device", true);
    s.calibration_seconds = top.seconds("calibration_seconds");
    if (const json* cands = top.array("candidates", kMaxCandidates))
      for (std::size_t i = 0; i < cands->size() && problem.empty(); ++i) {
        Fields c((*cands)[i], "candidate " + std::to_string(i), problem);
        SelectionCandidate cand;
        cand.device = c.text("device", true);
        cand.eligible = c.boolean("eligible");
        cand.seconds = c.seconds("seconds");
        cand.runs = static_cast<int>(c.unsigned_in("runs", 0, INT_MAX));
        cand.note = c.text("note", false);
        cand.check = c.check("check");
        cand.check_error = c.non_negative("check_error");
        if ((*cands)[i].is_object() && (*cands)[i].contains("device_seconds"))
          cand.device_seconds = c.seconds("device_seconds");
        // A wrong result is never eligible: a record saying otherwise could choose it.
        if (cand.check == ResultCheck::wrong && cand.eligible) c.problem("computed a wrong result but is eligible");
        s.candidates.push_back(std::move(cand));
      }
  }
  if (!problem.empty()) {
    if (why) *why = problem;
    return std::nullopt;
  }
  s.source = SelectionSource::persisted;
  return s;
}

}  // namespace vgpu::detail
