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
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/run_outputs.hpp"
#include "cli/signals.hpp"
#include "device/device.hpp"
#include "io/file_digest.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "reports/run/soak_report.hpp"
#include "reports/run/summary_json.hpp"
#include "run/run_plan.hpp"
#include "run/runner.hpp"
#include "run/soak.hpp"
#include "trace/trace.hpp"

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

namespace {

// A framework's spelling of its allocator's settings (--alloc-conf) is that backend's options in
// its words: after -a BACKEND's own, or alone (the allocator left at auto).
std::string with_spelled_settings(const std::string& allocator, const std::string& text) {
  const SettingsSpelling* spelling = settings_spelling();
  if (text.empty() || spelling == nullptr) return allocator;
  static_cast<void>(spelling->assignments(text, spelling->flag));  // its errors name its flag
  const std::string& backend = spelling->backend;
  if (allocator == "auto") return backend + ":" + text;
  if (allocator == backend || allocator.starts_with(backend + ":"))
    return allocator + (allocator == backend ? ":" : ",") + text;
  throw_usage(fmt::format("{}: these settings are the {} allocator's: drop '-a {}' or give -a {}",
                          spelling->flag, backend, allocator, backend));
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
  AllocatorChoice allocator =
      parse_allocator(with_spelled_settings(o.allocator, o.spelled_settings));
  config.allocator = allocator.kind;
  config.allocator_options = std::move(allocator.options);
  config.budget = with_flag("--budget", [&] { return parse_budget(o.budget); });
  config.seed = with_flag("--seed", [&] { return parse_unsigned(o.seed); });
  config.device = with_flag("--device", [&] { return parse_device_index(o.device); });
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

// The backend that models the allocator the run's trace recorded, when its format names one and
// the replay is at the tensor level (the head of --trace, or --format, says which format): `auto`
// then means that model. "" otherwise; a file that cannot be read is the scenario's to refuse,
// with its own words.
std::string recorded_allocator_model(const Params& params) {
  const auto& v = params.values();
  if (!v.contains("trace") || params.text("trace").empty()) return {};
  if (v.contains("level") && params.choice("level") != "tensor") return {};
  // Only a file's head is read (opening a FIFO would wait for a writer): anything else is
  // refused when the trace is loaded.
  std::string head;
  if (std::error_code ec; fs::is_regular_file(params.text("trace"), ec)) {
    std::ifstream file(params.text("trace"), std::ios::binary);
    head.assign(64, '\0');
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(file.gcount()));
  }
  const trace::FormatInfo* format = nullptr;
  if (v.contains("format") && params.text("format") != "auto") {
    format = trace::find_format(params.text("format"));
  } else if (!head.empty()) {
    format = trace::format_info(trace::detect_format(head));
  }
  return format != nullptr ? format->replayed_by : std::string();
}

}  // namespace

// `auto` becomes a concrete backend here, with that backend's default options, so that the run
// folder is named after what really runs; the probed environment goes on to the runner.
void resolve_allocator(RunConfig& config, Console& console) {
  const std::string model = config.allocator == BackendKind::automatic
                                ? recorded_allocator_model(config.params)
                                : std::string();
  const bool snapshot = !model.empty();
  const bool host_only = snapshot || (config.allocator != BackendKind::automatic &&
                                      !uses_device(config.allocator, config.allocator_options));
  config.environment = host_only ? probe_host_environment() : probe_environment();
  ResolvedAllocator choice =
      snapshot ? model_of_recorded_allocator(model)
               : resolve_automatic(config.allocator, config.allocator_options, *config.environment);
  config.allocator = choice.kind;
  config.allocator_options = std::move(choice.options);
  if (snapshot) {
    config.allocator_notice = std::move(choice.notice);  // said once the trace is read
  } else if (!choice.notice.empty()) {
    console.notice(choice.notice);
  }
}

namespace {

// Refused before it started (bad usage, no device): no empty run folder is left behind.
RunResult run_or_clean_up(const RunConfig& config, const std::optional<fs::path>& folder,
                          bool created_folder) {
  try {
    return run_scenario(config);
  } catch (...) {
    std::error_code ec;
    if (folder && created_folder) fs::remove_all(*folder, ec);
    throw;
  }
}

// --repeat N: the soak. The last cycle's record as for any run, soak.json beside it, the soak's
// lines, and exit 1 when something did not come back.
int soak_command(const RunConfig& config, std::uint32_t cycles, const RunRecord& record,
                 Console& console, std::ostream& out, std::ostream& err) {
  const RunOptions& o = record.options;
  const auto start = std::chrono::steady_clock::now();
  const SoakResult soak = oomlab::soak(config, cycles, [&](std::uint32_t i, const SoakCycle& c) {
    if (!console.progress_enabled()) return;
    console.progress(fmt::format(
        "soak {}/{} · cycle {} {} · resident {} · {:.0f} s", o.scenario,
        backend_info(config.allocator).name, i + 1, to_string(c.outcome), format_bytes(c.rss_bytes),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  });
  console.end_progress();
  OutputFailures failures;
  const bool soak_written = record.folder && failures.attempt([&] {
    write_output_file(*record.folder / "soak.json", soak_json(soak, cycles).dump(2) + "\n");
  });
  RunOptions last = o;
  last.quiet = true;  // the soak's lines instead of the last cycle's summary
  write_outputs(soak.last, {last, record.invocation, record.folder}, out, err, failures);
  if (!o.quiet) {
    words_stream(stdout_output(o), out, err) << soak_text(soak, cycles);
    if (soak_written) {
      words_stream(stdout_output(o), out, err) << fmt::format(
          "wrote      {}/ (soak.json, summary.json of the last cycle, events.csv of the first)\n",
          record.folder->string());
    }
  }
  std::string why;
  int code = exit_code_for(soak.last, o, &why);
  if (code == kExitOk && !soak_problems(soak).empty()) {
    code = kExitCheckFailed;
    why = fmt::format("soak: {}", fmt::join(soak_problems(soak), "; "));
  }
  if (!o.junit.empty())
    failures.attempt([&] { write_run_junit(soak.last, o.junit, code, why, out); });
  if (code != kExitOk) err << fmt::format("oomlab: {}\n", why);
  return failures.report(err, code);
}

// The record, the junit file and the reason, once the run has ended; the exit code.
int finish_run(const RunResult& result, const RunRecord& record, std::ostream& out,
               std::ostream& err) {
  const RunOptions& o = record.options;
  OutputFailures failures;
  write_outputs(result, record, out, err, failures);
  std::string why;
  const int code = exit_code_for(result, o, &why);
  if (!o.junit.empty()) failures.attempt([&] { write_run_junit(result, o.junit, code, why, out); });
  if (code != kExitOk) err << fmt::format("oomlab: {}\n", why);
  return failures.report(err, code);
}

}  // namespace

int run_command(const RunOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err) {
  Console console(err, !o.quiet && isatty(STDERR_FILENO) == 1);
  RunConfig config = config_from(o);
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  const std::uint64_t cycles = with_flag("--repeat", [&] { return parse_unsigned(o.repeat); });
  if (cycles < 1 || cycles > 1'000'000)
    throw_usage(fmt::format("--repeat: '{}' is not between 1 and 1000000", o.repeat));
  check_destinations(o);
  resolve_allocator(config, console);
  const BackendInfo& backend = backend_info(config.allocator);
  if (backend.validate_card != nullptr && config.budget.kind == BudgetRequest::Kind::bytes)
    backend.validate_card(config.allocator_options, config.budget.bytes.value);
  const std::string& allocator_name = backend.name;
  const bool folder_existed = !o.out.empty() && fs::exists(o.out);
  // The trace's digest is worked out beside the run, which reads the same file meanwhile.
  FileDigests digests(Registry::global().find(o.scenario)->params, config.params);
  const RunRecord record{o, {argv, {}}, prepare_run_folder(o, allocator_name)};
  const auto with_digests = [&record, &digests] {
    RunRecord whole = record;
    whole.invocation.files = digests.get();
    return whole;
  };
  // With --no-out the events go straight to --csv, when it is given.
  config.events_csv = record.folder ? *record.folder / "events.csv" : fs::path(o.csv);
  // Held until the record is written: a stop that comes after the run's end (a matrix stopped
  // right then) waits for the record instead of killing the process half-way through it.
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  config.notice = [&](std::string_view text) { console.notice(text); };
  if (console.progress_enabled()) {
    config.progress = [&console, name = fmt::format("{}/{}", o.scenario, allocator_name)](
                          const ProgressSnapshot& s) { console.progress(progress_line(name, s)); };
  }
  // A call that never returned: the record so far, then the process ends (the driver takes its
  // memory back); this runs on the watchdog's thread while the run's thread is stuck.
  config.on_hung = [&](const RunResult& hung) {
    console.end_progress();
    const int code = finish_run(hung, with_digests(), out, err);
    out.flush();
    err.flush();
    std::_Exit(code);
  };
  if (cycles > 1) {
    config.progress = {};
    return soak_command(config, static_cast<std::uint32_t>(cycles), with_digests(), console, out,
                        err);
  }
  RunResult result = run_or_clean_up(config, record.folder, !folder_existed);
  console.end_progress();
  if (const BackendInfo& info = backend_info(result.backend);
      info.check_settings != nullptr && result.oom) {
    if (console.progress_enabled())
      console.progress(fmt::format("checking {}'s settings at this budget", info.name));
    info.check_settings(config, result);
    console.end_progress();
  }
  return finish_run(result, with_digests(), out, err);
}

}  // namespace oomlab::cli
