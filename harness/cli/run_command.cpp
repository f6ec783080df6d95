// `oomlab run`: typed config from the flags, the run, its files, the summary and the exit code.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/parse.hpp"
#include "cli/signals.hpp"
#include "device/device.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "reports/human_summary.hpp"
#include "reports/junit.hpp"
#include "reports/soak_report.hpp"
#include "reports/summary_json.hpp"
#include "run/runner.hpp"
#include "run/soak.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// Parses one flag's value, naming the flag in the message when it is wrong.
template <typename Parse>
auto with_flag(std::string_view flag, Parse&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    throw_usage(fmt::format("{}: {}", flag, e.what()));
  }
}

// --trace, --format and --strict are the scenario's own parameters under other names.
std::vector<std::string> assignments_of(const RunOptions& o, const Registry::Entry& scenario) {
  std::vector<std::string> assignments = o.params;
  const auto add = [&](const char* flag, const char* name, const std::string& value) {
    const bool declared = std::any_of(scenario.params.begin(), scenario.params.end(),
                                      [&](const ParamDef& d) { return d.name == name; });
    if (!declared)
      throw_usage(fmt::format("{}: scenario '{}' takes no {}", flag, scenario.name, name));
    assignments.push_back(fmt::format("{}={}", name, value));
  };
  if (!o.trace.empty()) add("--trace", "trace", o.trace);
  if (!o.format.empty()) add("--format", "format", o.format);
  if (o.strict) add("--strict", "strict", "on");
  return assignments;
}

}  // namespace

RunConfig config_from(const RunOptions& o) {
  const Registry::Entry* entry = Registry::global().find(o.scenario);
  if (entry == nullptr) {
    throw_usage(fmt::format("unknown scenario '{}'{} (known: {})", o.scenario,
                            did_you_mean(o.scenario, Registry::global().names()),
                            fmt::join(Registry::global().names(), ", ")));
  }
  RunConfig config;
  config.scenario = o.scenario;
  config.params = parse_params(entry->params, assignments_of(o, *entry),
                               fmt::format("scenario '{}'", o.scenario), "--param");
  AllocatorChoice allocator = parse_allocator(o.allocator);
  config.allocator = allocator.kind;
  config.allocator_options = std::move(allocator.options);
  config.budget = with_flag("--budget", [&] { return parse_budget(o.budget); });
  config.seed = with_flag("--seed", [&] { return parse_unsigned(o.seed); });
  const std::uint64_t device = with_flag("--device", [&] { return parse_unsigned(o.device); });
  if (device > 1024) throw_usage(fmt::format("--device: '{}' is not a device index", o.device));
  config.device = static_cast<int>(device);
  config.probe = !o.no_probe;
  config.verify = with_flag("--verify", [&] { return parse_verify_mode(o.verify); });
  if (!o.timeout.empty()) {
    const double seconds = with_flag("--timeout", [&] { return parse_real(o.timeout); });
    if (!(seconds >= 0.001 && seconds <= 7 * 86400.0)) {
      throw_usage(fmt::format("--timeout: '{}' is not a number of seconds from 0.001 to a week",
                              o.timeout));
    }
    config.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1e3));
    // A stop is seen at the next event, within microseconds; waiting as long as the timeout
    // itself (1 s to 10 s) before calling a call hung leaves any real one time to return.
    config.hang_grace = std::clamp(config.timeout, std::chrono::milliseconds(1000),
                                   std::chrono::milliseconds(10'000));
  }
  return config;
}

namespace {

fs::path default_run_folder(const std::string& scenario, std::string_view allocator) {
  const auto now = std::chrono::system_clock::now();
  const std::string stamp =
      fmt::format("{:%Y%m%dT%H%M%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
  fs::path folder = fs::path("oomlab-runs") / fmt::format("{}-{}-{}", stamp, scenario, allocator);
  for (int n = 2; fs::exists(folder); ++n) {
    folder = fs::path("oomlab-runs") / fmt::format("{}-{}-{}-{}", stamp, scenario, allocator, n);
  }
  return folder;
}

fs::path prepare_folder(const RunOptions& o, std::string_view allocator) {
  fs::path folder = o.out.empty() ? default_run_folder(o.scenario, allocator) : fs::path(o.out);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder)) {
    throw_usage(fmt::format("--out: cannot create folder {}: {}", folder.string(),
                            ec ? ec.message() : "a file of that name exists"));
  }
  return folder;
}

}  // namespace

// --json, --csv and --junit are looked at before the run: a run is not made to be lost at the end
// for want of a folder.
void check_destination(std::string_view flag, const std::string& path) {
  if (path.empty() || path == "-") return;
  const fs::path file(path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw_usage(fmt::format("{}: {} is a folder, not a file", flag, path));
  if (!fs::is_directory(folder, ec))
    throw_usage(fmt::format("{}: cannot write {}: no folder {}", flag, path, folder.string()));
  // An existing file is rewritten in place (its folder need not be writable); a new one is made.
  const bool writable = fs::exists(file, ec) ? ::access(file.c_str(), W_OK) == 0
                                             : ::access(folder.c_str(), W_OK) == 0;
  if (!writable) throw_usage(fmt::format("{}: cannot write {}: permission denied", flag, path));
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) throw Error(ErrorKind::io, fmt::format("cannot write {}", path.string()));
}

}  // namespace

int exit_code_for(const RunResult& r, const RunOptions& o, std::string* why) {
  if (r.outcome == Outcome::interrupted) {
    *why = "interrupted: everything was freed and the record so far was written";
    return kExitInterrupted;
  }
  if (r.outcome == Outcome::timeout) {
    *why = r.error_message.empty()
               ? std::string(
                     "timeout: the run passed --timeout; everything was freed and the "
                     "record so far was written")
               : fmt::format("timeout: {}", r.error_message);
    return kExitCellFailed;
  }
  if (r.outcome == Outcome::error) {
    *why = r.error_message;  // "the run failed: ...", "releasing the device: ..."
    return kExitCheckFailed;
  }
  if (o.expect_oom && r.outcome != Outcome::oom) {
    *why = fmt::format("--expect-oom: the run ended '{}', not in OOM", to_string(r.outcome));
    return kExitCheckFailed;
  }
  if (o.expect_no_oom && r.outcome == Outcome::oom) {
    *why = fmt::format("--expect-no-oom: the run ran out of memory ({})",
                       to_string(r.oom->diagnosis.cause));
    return kExitCheckFailed;
  }
  if (r.integrity_corrupted > 0) {
    *why = fmt::format("{} blocks did not hold the data written to them", r.integrity_corrupted);
    return kExitCheckFailed;
  }
  if (r.cleanup && r.cleanup->leaked(static_cast<std::int64_t>(kDevicePageBytes))) {
    *why = "device memory was left behind after the run (see 'device' above)";
    return kExitCheckFailed;
  }
  return kExitOk;
}

namespace {

// `auto` becomes a concrete backend here, with that backend's default options, so that the run
// folder is named after what really runs; the probed environment goes on to the runner.
}  // namespace

void resolve_allocator(RunConfig& config, Console& console) {
  const bool host_only = config.allocator != BackendKind::automatic &&
                         !uses_device(config.allocator, config.allocator_options);
  config.environment = host_only ? probe_host_environment() : probe_environment();
  if (config.allocator != BackendKind::automatic) return;
  std::string why;
  config.allocator = resolve_auto_allocator(*config.environment, &why);
  config.allocator_options = Params(backend_info(config.allocator).options);
  if (config.allocator == BackendKind::sim) {
    console.notice(fmt::format("{}: using the simulated allocator 'sim'", why));
  }
}

namespace {

RunResult run_with_signals(const RunConfig& config, const fs::path& folder, bool created_folder) {
  const StopOnSignal signals;
  try {
    return run_scenario(config);
  } catch (...) {
    // Refused before it started (bad usage, no device): leave no empty run folder behind.
    std::error_code ec;
    if (created_folder) fs::remove_all(folder, ec);
    throw;
  }
}

void write_outputs(const RunResult& result, const RunOptions& o,
                   const std::vector<std::string>& argv, const fs::path& folder, std::ostream& out,
                   std::ostream& err) {
  const std::string json = summary_json(result, Invocation{argv}).dump(2) + "\n";
  write_text(folder / "summary.json", json);
  if (o.json == "-") {
    out << json;
  } else if (!o.json.empty()) {
    write_text(o.json, json);
  }
  if (!o.csv.empty()) {
    std::error_code ec;
    fs::copy_file(folder / "events.csv", o.csv, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw Error(ErrorKind::io, fmt::format("--csv: cannot write {}: {}", o.csv, ec.message()));
  }
  if (!o.quiet) {
    (o.json == "-" ? err : out) << human_summary(
        result, fmt::format("{}/ (events.csv, summary.json)", folder.string()));
  }
}

// One testcase: passed when the run did what it was asked (a provoked OOM included).
void write_run_junit(const RunResult& result, const std::string& path, int code,
                     const std::string& why) {
  JUnitCase c{.classname = "oomlab.run." + result.scenario,
              .name = result.allocator,
              .seconds = result.duration_ms / 1e3};
  const std::string line = result.oom ? fmt::format("oom at {} live (request {}, {})",
                                                    format_bytes(result.oom->live_bytes),
                                                    format_bytes(result.oom->request_bytes),
                                                    to_string(result.oom->diagnosis.cause))
                                      : std::string(to_string(result.outcome));
  c.details = line;
  if (code != kExitOk) {
    c.result =
        result.outcome == Outcome::error ? JUnitCase::Result::error : JUnitCase::Result::failure;
    c.message = why;
  }
  std::ofstream file(path, std::ios::trunc);
  write_junit(file, "oomlab run", std::span<const JUnitCase>(&c, 1));
  file.close();
  if (!file) throw Error(ErrorKind::io, fmt::format("--junit: cannot write {}", path));
}

// --repeat N: the soak. The last cycle's record as for any run, soak.json beside it, the soak's
// lines, and exit 1 when something did not come back.
int soak_command(const RunConfig& config, std::uint32_t cycles, const RunOptions& o,
                 const std::vector<std::string>& argv, const fs::path& folder, Console& console,
                 std::ostream& out, std::ostream& err) {
  const StopOnSignal signals;
  const auto start = std::chrono::steady_clock::now();
  const SoakResult soak = oomlab::soak(config, cycles, [&](std::uint32_t i, const SoakCycle& c) {
    if (!console.progress_enabled()) return;
    console.progress(fmt::format(
        "soak {}/{} · cycle {} {} · resident {} · {:.0f} s", o.scenario,
        backend_info(config.allocator).name, i + 1, to_string(c.outcome), format_bytes(c.rss_bytes),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  });
  console.end_progress();
  write_text(folder / "soak.json", soak_json(soak, cycles).dump(2) + "\n");
  RunOptions last = o;
  last.quiet = true;  // the soak's lines instead of the last cycle's summary
  write_outputs(soak.last, last, argv, folder, out, err);
  if (!o.quiet) {
    (o.json == "-" ? err : out) << soak_text(soak, cycles)
                                << fmt::format(
                                       "wrote      {}/ (soak.json, summary.json of the "
                                       "last cycle, events.csv of the first)\n",
                                       folder.string());
  }
  std::string why;
  int code = exit_code_for(soak.last, o, &why);
  if (code == kExitOk && !soak_problems(soak).empty()) {
    code = kExitCheckFailed;
    why = fmt::format("soak: {}", fmt::join(soak_problems(soak), "; "));
  }
  if (!o.junit.empty()) write_run_junit(soak.last, o.junit, code, why);
  if (code != kExitOk) err << fmt::format("oomlab: {}\n", why);
  return code;
}

}  // namespace

int run_command(const RunOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err) {
  Console console(err, !o.quiet && isatty(STDERR_FILENO) == 1);
  RunConfig config = config_from(o);
  const std::uint64_t cycles = with_flag("--repeat", [&] { return parse_unsigned(o.repeat); });
  if (cycles < 1 || cycles > 1'000'000)
    throw_usage(fmt::format("--repeat: '{}' is not between 1 and 1000000", o.repeat));
  check_destination("--json", o.json);
  check_destination("--csv", o.csv);
  check_destination("--junit", o.junit);
  resolve_allocator(config, console);
  const std::string allocator_name = backend_info(config.allocator).name;
  const bool folder_existed = !o.out.empty() && fs::exists(o.out);
  const fs::path folder = prepare_folder(o, allocator_name);
  config.events_csv = folder / "events.csv";
  config.stop = StopOnSignal::flag();
  config.notice = [&](std::string_view text) { console.notice(text); };
  if (console.progress_enabled()) {
    config.progress = [&console, name = fmt::format("{}/{}", o.scenario, allocator_name)](
                          const ProgressSnapshot& s) { console.progress(progress_line(name, s)); };
  }
  // A call that never returned: the record so far, then the process ends (the driver takes its
  // memory back); this runs on the watchdog's thread while the run's thread is stuck.
  config.on_hung = [&](const RunResult& record) {
    console.end_progress();
    std::string why;
    const int code = exit_code_for(record, o, &why);
    try {
      write_outputs(record, o, argv, folder, out, err);
      if (!o.junit.empty()) write_run_junit(record, o.junit, code, why);
    } catch (const std::exception& e) {
      err << fmt::format("oomlab: error: {}\n", e.what());
    }
    err << fmt::format("oomlab: {}\n", why);
    out.flush();
    err.flush();
    std::_Exit(code);
  };
  if (cycles > 1) {
    config.progress = {};
    return soak_command(config, static_cast<std::uint32_t>(cycles), o, argv, folder, console, out,
                        err);
  }
  const RunResult result = run_with_signals(config, folder, !folder_existed);
  console.end_progress();
  write_outputs(result, o, argv, folder, out, err);
  std::string why;
  const int code = exit_code_for(result, o, &why);
  if (!o.junit.empty()) write_run_junit(result, o.junit, code, why);
  if (code != kExitOk) err << fmt::format("oomlab: {}\n", why);
  return code;
}

}  // namespace oomlab::cli
