// SPDX-License-Identifier: Apache-2.0
// tests/selection/selection_store_test.cpp — part of vgpu-test-selection: persisted selections are
// untrusted input. A stored choice naming a device that is not there, or a payload with a
// field out of range or of the wrong type (resealed with valid checksums, as a tool or a hand
// edit leaves it), is dropped with one warning and the class is calibrated again; the strict
// JSON reader (core/runtime/selection/selection_json.hpp) refuses each bad field by name.
#include <unistd.h>

#include "support/catch.hpp"
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "selection_json.hpp"
#include "support/cache_fixtures.hpp"
#include "support/helper_path.hpp"
#include "vgpu/cache/disk_store.hpp"
#include "vgpu/cache/kernel_key.hpp"

#ifndef VGPU_SELECT_CHILD
#error "VGPU_SELECT_CHILD (path of vgpu-test-select-child) must be defined by the build"
#endif

namespace vgpu_test {
namespace {

using nlohmann::json;

ChildRun run_child(const std::filesystem::path& cache_dir, const std::string& salt) {
  return vgpu::test::run_child_command(
      "env -u VGPU_CACHE_DISABLE -u VGPU_DEVICE -u VGPU_BACKEND VGPU_LOG=warn "
      "VGPU_CACHE_DIR=" +
      quoted(cache_dir.string()) + " " + quoted(vgpu::test::helper_path(VGPU_SELECT_CHILD)) + " " + quoted(salt) +
      " 2000 0 2000 2>&1");
}

/// Rewrites the one selection entry in dir (not its pointer) through edit(json) and reseals it
/// (valid header and payload checksums), as a tool or a hand edit would.
void edit_selection(const std::filesystem::path& dir, const std::function<void(json&)>& edit) {
  const auto found = vgpu::test::selection_entries(dir, true);
  REQUIRE(found.size() == 1);
  REQUIRE(found[0].valid);
  const vgpu::DeviceFingerprint fp{found[0].fingerprint_text, vgpu::cache::hash64(found[0].fingerprint_text)};
  const vgpu::cache::KernelKey key{std::stoull(found[0].key_hex.substr(0, 16), nullptr, 16),
                                   std::stoull(found[0].key_hex.substr(16), nullptr, 16)};
  DiskStore store(options_for(dir));
  const auto payload = store.load(EntryKind::selection, key, fp);
  REQUIRE(payload);
  json j = json::parse(payload->begin(), payload->end());
  edit(j);
  const std::string text = j.dump();
  REQUIRE(store.store(EntryKind::selection, key, fp, std::vector<std::uint8_t>(text.begin(), text.end()), 1));
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Calibrates once in a fresh directory, damages the stored choice with edit, and checks that
/// the next process warns once, calibrates again (right device) and stores a fresh choice that
/// the process after it reuses.
void expect_recalibrated(const std::string& what, const std::function<void(json&)>& edit) {
  INFO(what);
  TempDir dir("select-bad-");
  const std::string salt = vgpu::test::unique_name("bad");
  const ChildRun first = run_child(dir.path, salt);
  INFO(first.output);
  REQUIRE(first.status == 0);
  REQUIRE(first.text("source") == "calibrated");
  edit_selection(dir.path, edit);

  const ChildRun second = run_child(dir.path, salt);
  INFO(second.output);
  REQUIRE(second.status == 0);
  CHECK(second.text("source") == "calibrated");
  CHECK(second.text("device") == "test:1");
  CHECK(second.text("dispatches") != "0,0,0");
  CHECK(occurrences(second.output, "ignoring the stored selection for axpy class 10") == 1);

  const ChildRun third = run_child(dir.path, salt);
  INFO(third.output);
  REQUIRE(third.status == 0);
  CHECK(third.text("source") == "persisted");
  CHECK(third.text("device") == "test:1");
  CHECK(occurrences(third.output, "ignoring the stored selection for axpy class 10") == 0);
}

}  // namespace

TEST_CASE("a persisted choice naming a device that is not present is ignored and calibrated again",
          "[select][processes][untrusted]") {
  // Once: "no device 'vulkan:7'" from vgpu-demo on every run.
  expect_recalibrated("device test:7", [](json& j) {
    j["device"] = "test:7";
    j["candidates"][0]["device"] = "test:7";
  });
  expect_recalibrated("a candidate test:9", [](json& j) { j["candidates"].back()["device"] = "test:9"; });
  expect_recalibrated("a choice that is not the first eligible candidate", [](json& j) { j["device"] = "test:2"; });
  expect_recalibrated("another op", [](json& j) { j["op"] = "matmul"; });
}

TEST_CASE("a persisted selection with a number out of range or of the wrong type is dropped and calibrated again",
          "[select][processes][untrusted]") {
  // Once undefined behaviour: get<int>() on 1e300.
  expect_recalibrated("runs 1e300", [](json& j) { j["candidates"][0]["runs"] = 1e300; });
  expect_recalibrated("size_class 1e300", [](json& j) { j["size_class"] = 1e300; });
  expect_recalibrated("version 1e300", [](json& j) { j["version"] = 1e300; });
  expect_recalibrated("calibration_shape [1e300]", [](json& j) { j["calibration_shape"] = json::array({1e300}); });
  expect_recalibrated("runs -1", [](json& j) { j["candidates"][0]["runs"] = -1; });
  expect_recalibrated("seconds as text", [](json& j) { j["candidates"][0]["seconds"] = "fast"; });
}

TEST_CASE("the selection reader refuses every field out of range or of the wrong type, by name",
          "[select][untrusted]") {
  vgpu::Selection s;
  s.op = "axpy";
  s.calibration_shape = {1000};
  s.size_class = 10;
  s.device = "test:1";
  s.calibration_seconds = 0.25;
  s.candidates = {{"test:1", true, 1e-5, 3, false, "", vgpu::ResultCheck::passed, 0.25},
                  {"test:0", false, 0, 0, false, "rejected: wrong result (x)", vgpu::ResultCheck::wrong, 1e300},
                  {"test:2", false, 0, 0, false, "failed: x"}};
  const std::string good = vgpu::detail::selection_to_json(s);
  std::string why;
  const auto back = vgpu::detail::selection_from_json(good, &why);
  INFO(why);
  REQUIRE(back);
  CHECK(back->op == s.op);
  CHECK(back->calibration_shape == s.calibration_shape);
  CHECK(back->size_class == s.size_class);
  CHECK(back->device == s.device);
  CHECK(back->candidates.size() == 3);
  CHECK(back->candidates[0].runs == 3);
  // Each candidate's result check (version 2, issue 29).
  CHECK(back->candidates[0].check == vgpu::ResultCheck::passed);
  CHECK(back->candidates[0].check_error == 0.25);
  CHECK(back->candidates[1].check == vgpu::ResultCheck::wrong);
  CHECK(back->candidates[1].check_error == 1e300);
  CHECK(back->candidates[2].check == vgpu::ResultCheck::unchecked);
  CHECK(back->source == vgpu::SelectionSource::persisted);

  // A note is a device's error text, which can quote non-UTF-8 bytes (a compile log of a
  // Latin-1 source): written replaced, never nlohmann's type_error, and read back.
  vgpu::Selection bytes = s;
  bytes.candidates[1].note = "failed: caf\xe9";
  std::string text;
  REQUIRE_NOTHROW(text = vgpu::detail::selection_to_json(bytes));
  const auto replaced = vgpu::detail::selection_from_json(text, &why);
  INFO(why);
  REQUIRE(replaced);
  CHECK(replaced->candidates[1].note == "failed: caf\xef\xbf\xbd");

  const json base = json::parse(good);
  const std::vector<std::tuple<std::string, std::function<void(json&)>, std::string>> cases = {
      {"runs 1e300", [](json& j) { j["candidates"][0]["runs"] = 1e300; }, "\"runs\" is not a non-negative integer"},
      {"runs 2^31", [](json& j) { j["candidates"][0]["runs"] = 2147483648ull; }, "\"runs\" is 2147483648, outside"},
      {"runs 2.5", [](json& j) { j["candidates"][0]["runs"] = 2.5; }, "\"runs\" is not a non-negative integer"},
      {"size_class 1e300", [](json& j) { j["size_class"] = 1e300; }, "\"size_class\" is not a non-negative integer"},
      {"size_class 65", [](json& j) { j["size_class"] = 65; }, "\"size_class\" is 65, outside 0..64"},
      {"size_class -1", [](json& j) { j["size_class"] = -1; }, "\"size_class\" is not a non-negative integer"},
      {"version 1e300", [](json& j) { j["version"] = 1e300; }, "\"version\" is not a non-negative integer"},
      {"version 3", [](json& j) { j["version"] = 3; }, "payload version 3"},
      // Version 1 was written before results were checked: never trusted now.
      {"version 1", [](json& j) { j["version"] = 1; }, "payload version 1"},
      {"check unknown", [](json& j) { j["candidates"][0]["check"] = "maybe"; },
       "candidate 0 field \"check\" is not \"unchecked\", \"passed\" or \"wrong\""},
      {"check 1", [](json& j) { j["candidates"][0]["check"] = 1; }, "\"check\" is not a string"},
      {"no check", [](json& j) { j["candidates"][0].erase("check"); }, "\"check\" is missing"},
      {"check_error -1", [](json& j) { j["candidates"][0]["check_error"] = -1.0; },
       "\"check_error\" is not a finite number >= 0"},
      {"check_error text", [](json& j) { j["candidates"][0]["check_error"] = "big"; },
       "\"check_error\" is not a number"},
      {"wrong but eligible", [](json& j) { j["candidates"][1]["eligible"] = true; },
       "candidate 1 computed a wrong result but is eligible"},
      {"shape 1e300", [](json& j) { j["calibration_shape"] = json::array({1e300}); }, "calibration_shape[0]"},
      {"shape 0", [](json& j) { j["calibration_shape"] = json::array({0}); }, "calibration_shape[0]"},
      {"shape empty", [](json& j) { j["calibration_shape"] = json::array(); }, "\"calibration_shape\" is not an array"},
      {"seconds -1", [](json& j) { j["calibration_seconds"] = -1.0; }, "\"calibration_seconds\" is not a finite"},
      {"seconds text", [](json& j) { j["candidates"][1]["seconds"] = "x"; },
       "candidate 1 field \"seconds\" is not a number"},
      {"device 7", [](json& j) { j["device"] = 7; }, "\"device\" is not a string"},
      {"device empty", [](json& j) { j["device"] = ""; }, "\"device\" is empty"},
      {"eligible 1", [](json& j) { j["candidates"][0]["eligible"] = 1; }, "\"eligible\" is not true or false"},
      {"no candidates", [](json& j) { j["candidates"] = json::array(); }, "\"candidates\" is not an array"},
      {"candidate not an object", [](json& j) { j["candidates"][0] = 5; }, "candidate 0 is not a JSON object"},
      {"no op", [](json& j) { j.erase("op"); }, "\"op\" is missing"},
      {"not an object",
       [](json& j) {
         j = json::array({1, 2});
       },
       "the selection is not a JSON object"},
  };
  for (const auto& [what, edit, expected] : cases) {
    INFO(what);
    json j = base;
    edit(j);
    why.clear();
    CHECK_FALSE(vgpu::detail::selection_from_json(j.dump(), &why));
    CHECK_THAT(why, Catch::Matchers::ContainsSubstring(expected));
  }
  for (const std::string text : {"", "{", "1e400", "[[[[[[[[[[]]]]]]]]]]", "{\"version\":1}", "null"}) {
    INFO(text);
    CHECK_FALSE(vgpu::detail::selection_from_json(text, &why));
  }
}

}  // namespace vgpu_test
