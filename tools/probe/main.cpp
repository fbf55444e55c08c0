// SPDX-License-Identifier: Apache-2.0
// tools/probe/main.cpp — vgpu-probe: lists backends and devices and self-tests each device.
// The default action runs when no subcommand is given; the subcommands (list, bench, select,
// cache ...) attach to the same CLI::App in add_subcommands(). What writes the kernel cache:
// only what is for that (cache clear/verify --fix/import, --features' verdicts) or measures
// what later runs reuse (select, bench); the plain run and list read and write nothing there.
#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_command.hpp"
#include "cache_command.hpp"
#include "list_command.hpp"
#include "report.hpp"
#include "select_command.hpp"
#include "self_test.hpp"
#include "vgpu/backend_list.hpp"
#include "vgpu/error.hpp"
#include "vgpu/log.hpp"
#include "vgpu/runtime.hpp"

namespace {

/// Process exit codes, documented in the --help footer.
enum ExitCode : int {
  kOk = 0,
  kSelfTestFailed = 1,
  kUsageError = 2,
  kVgpuError = 3,
  kUnexpectedError = 4,
};

// The help's footer; VGPU_BACKEND's example lists the backends this build knows.
std::string footer() {
  return "Exit codes:\n"
         "  0  ok (every self-test passed, or self-tests were skipped)\n"
         "  1  a device's self-test failed (bench: a device failed; cache verify: bad entries\n"
         "     remain, also after --fix when some could not or must not be deleted; cache clear:\n"
         "     something could not or must not be deleted; each is listed with why and a Fix)\n"
         "  2  usage error: bad command-line arguments, or a bad value in one (a SIZE that is\n"
         "     no size, an unknown OP, a --device that names no device, a cache import FILE\n"
         "     that is no usable bundle (also one of a newer version), a cache export FILE that\n"
         "     is not a regular file); the message ends in a \"Fix:\" hint\n"
         "  3  a vgpu error escaped (a device, driver or cache failure); its message ends in a\n"
         "     \"Fix:\" hint\n"
         "  4  any other unexpected error (a bug: please report it)\n"
         "With --json (in any position) every document on stdout starts with \"schema\": 1\n"
         "(docs/probe.md); on exit 2, 3 or 4 stdout holds {\"schema\", \"error\"}.\n"
         "\n"
         "The plain run and list neither read nor write the on-disk kernel cache (the self-test\n"
         "compiles in memory); --features keeps its verdicts there, select its choice, bench the\n"
         "kernels it compiled, and the cache subcommands change it as they say.\n"
         "\n"
         "Environment: VGPU_BACKEND=" +
         vgpu::backend_name_list(",") +
         " limits the backends probed;\n"
         "VGPU_LOG=error|warn|info|debug sets the stderr log level; VGPU_CACHE_DIR,\n"
         "VGPU_CACHE_DISABLE and VGPU_CACHE_MAX_BYTES configure the on-disk kernel cache\n"
         "(device selections are kept there too); VGPU_DEVICE=backend:index forces the device\n"
         "that select reports (select --device overrides it); VGPU_TIMEOUT_MS limits every wait for a device (default "
         "60000,\n"
         "0 = no limit).";
}

/// Options shared by the default action and the subcommands.
struct Options {
  bool json = false;
  bool self_test = true;
  bool features = false;
  std::vector<std::string> devices;  ///< --device: only these (empty: every device)
  std::function<int()> action;       ///< set when a subcommand was chosen; runs it instead
};

/// Prints {"schema","error":{"category","message","exit_code"}} on stdout, so a script reading
/// --json output gets a document also when the run failed (the text line still goes to stderr).
void print_json_error(const std::string& category, const std::string& message, int exit_code) {
  nlohmann::ordered_json j = vgpu::probe::json_document();
  j["error"] = {{"category", category}, {"message", message}, {"exit_code", exit_code}};
  std::cout << vgpu::probe::json_text(j) << "\n" << std::flush;
}

/// Registers the bench, select and cache subcommands on app.
void add_subcommands(CLI::App& app, Options& options) {
  vgpu::probe::add_list_command(app, options.action);
  vgpu::probe::add_bench_command(app, options.action);
  vgpu::probe::add_select_command(app, options.action);
  vgpu::probe::add_cache_command(app, options.action);
  app.require_subcommand(0, 1);
}

/// The default action: inventory, then self-tests, as a table or as one JSON object. Its own
/// runtime has the on-disk cache off (the self-test compiles in memory), except with --features,
/// whose verdicts are kept there for later runs (docs/probe.md).
int run_probe(const Options& options) {
  vgpu::Runtime runtime(options.features ? vgpu::RuntimeOptions::from_env() : vgpu::probe::read_only_options());
  vgpu::probe::ProbeReport report;
  report.backends = runtime.backends();
  for (auto& info : vgpu::probe::filter_devices(runtime.devices(), options.devices))
    report.devices.push_back({info, std::nullopt, std::nullopt});

  if (!options.json) vgpu::probe::print_inventory(std::cout, report);
  if (options.self_test) {
    if (!options.json) vgpu::probe::print_self_test_heading(std::cout);
    for (auto& device : report.devices) {
      vgpu::log(vgpu::LogLevel::info, "vgpu-probe: self-testing " + device.info.id());
      device.self_test = vgpu::probe::run_self_test(runtime, device.info);
      if (!options.json) vgpu::probe::print_self_test_line(std::cout, device.info, *device.self_test);
      std::cout.flush();  // a slow device's line should appear as soon as it is known
    }
    if (!options.json && report.devices.empty()) std::cout << "  no device to test\n";
  }
  if (options.features) {
    if (!options.json) vgpu::probe::print_feature_heading(std::cout);
    for (auto& device : report.devices) {
      device.feature_checks = vgpu::check_features(runtime.open(device.info.id()));
      if (!options.json) vgpu::probe::print_feature_lines(std::cout, device.info, *device.feature_checks);
      std::cout.flush();
    }
  }
  if (options.json) std::cout << vgpu::probe::json_text(vgpu::probe::to_json(report)) << "\n";
  std::cout << std::flush;
  return vgpu::probe::all_passed(report) ? kOk : kSelfTestFailed;
}

}  // namespace

/// Parses the command line and runs the chosen action, mapping failures to exit codes.
int main(int argc, char** argv) {
  CLI::App app{"vgpu-probe: list vgpu's backends and devices and self-test each device.", "vgpu-probe"};
  app.footer(footer());
  app.set_version_flag("-V,--version", "vgpu-probe " + vgpu::probe::version_string());
  Options options;
  app.add_flag("--json", options.json, "Print one JSON object on stdout (logs go to stderr)");
  bool skip_self_test = false;
  app.add_flag("--no-self-test", skip_self_test, "Skip the per-device matmul self-test");
  app.add_flag("--features", options.features,
               "Truth-test each device's advertised features (16-bit floats, int8, 16/8-bit storage, subgroup "
               "arithmetic) with a probe kernel; verdicts are kept in the cache (docs/probe.md)");
  vgpu::probe::add_device_option(app, options.devices, "list and self-test only these");
  add_subcommands(app, options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    if (app.exit(e) == 0) return kOk;
    // Parsing stopped, so the options are not read: --json anywhere on the line asks for the
    // error as a document too (the text went to stderr above).
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--json") {
        print_json_error("usage", e.what(), kUsageError);
        break;
      }
    return kUsageError;
  }
  options.self_test = !skip_self_test;
  options.json = vgpu::probe::json_requested(app);

  try {
    return options.action ? options.action() : run_probe(options);
  } catch (const vgpu::Error& e) {
    // A bad value in a subcommand's argument (SIZE, OP, --device, a FILE that is no usable
    // bundle or no place to export to) is the caller's mistake like a bad flag; the default
    // action takes no values, so there invalid_argument stays a vgpu error.
    const bool bad_value = dynamic_cast<const vgpu::probe::ArgumentError*>(&e) != nullptr ||
                           (options.action && e.category() == vgpu::ErrorCategory::invalid_argument);
    const int code = bad_value ? kUsageError : kVgpuError;
    std::cout << std::flush;
    std::cerr << "vgpu-probe: error (" << vgpu::to_string(e.category()) << "): " << e.what() << "\n";
    if (options.json) print_json_error(std::string(vgpu::to_string(e.category())), e.what(), code);
    return code;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << "vgpu-probe: unexpected error: " << e.what() << "\n";
    if (options.json) print_json_error("unexpected", e.what(), kUnexpectedError);
    return kUnexpectedError;
  }
}
