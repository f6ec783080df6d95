#include "exec/exec_outcome.hpp"

#include <fmt/format.h>

#include "exec/oom_place.hpp"
#include "exec/rank_attribution.hpp"
#include "exec/snapshot_shim.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "run/run_plan.hpp"

namespace oomlab {

namespace {

void keep_notice(const ExecConfig& config, RunResult& result, std::string text) {
  RunConfig for_notice;
  for_notice.notice = config.notice;
  notify(for_notice, result, std::move(text));
}

std::uint64_t total_of(const RunResult& result) {
  std::uint64_t total = 0;
  for (const DeviceFacts& f : result.environment.devices)
    total += f.total_bytes;
  return total;
}

// The device a run on several ran out on, and its budget; on one device, none and its budget.
struct OomDevice {
  std::optional<std::size_t> position;  // in the run's devices
  int index = 0;                        // oomlab's numbering
  std::uint64_t budget_bytes = 0;
};

OomDevice oom_device(const ProgramRun& p, const std::vector<std::uint64_t>& budgets) {
  const std::optional<std::size_t> failing = failing_device(p);
  if (!failing || *failing >= budgets.size()) return {.budget_bytes = budgets.front()};
  return {.position = failing,
          .index = p.device_runs[*failing].index,
          .budget_bytes = budgets[*failing]};
}

// The OOM's moment: the message's figures are the OOM's own (the last sample before it may be
// 5 ms old); on several devices, the failing device's own reading, not the devices summed.
MemoryReading oom_reading(const ExecObservation& seen, const ProgramOom& message,
                          const OomDevice& device) {
  MemoryReading at = with_stated(seen.oom_row ? seen.oom_row->second : seen.peak,
                                 stated_by(message), seen.free_at_start);
  if (!device.position || *device.position >= seen.devices.size()) return at;
  const std::optional<MemoryReading>& own = seen.devices[*device.position].at_oom;
  if (!own) return at;
  return MemoryReading{.t_ns = at.t_ns,
                       .program_bytes = own->program_bytes,
                       .used_bytes = own->used_bytes,
                       .free_bytes = own->free_bytes};
}

OomRecord oom_record(const ExecObservation& seen, const OomDevice& device,
                     const RunResult& result) {
  ProgramOom message = *seen.oom;
  note_budget(message, device.budget_bytes);  // a region larger than the budget: it sized itself
  const MemoryReading at = oom_reading(seen, message, device);
  const std::uint64_t total =
      device.position && *device.position < result.environment.devices.size()
          ? result.environment.devices[*device.position].total_bytes
          : total_of(result);
  return program_oom_record(message,
                            {.at = at,
                             .event = seen.oom_row ? seen.oom_row->first : 0,
                             .budget_bytes = device.budget_bytes,
                             .device_total_bytes = total,
                             .lines_seen = seen.oom_lines},
                            result.program ? &*result.program : nullptr);
}

std::string failure_text(const ProgramEnd& end, const ExecObservation& seen,
                         const OomDevice& device) {
  const std::uint64_t budget = device.budget_bytes;
  const std::uint64_t peak_used = device.position && *device.position < seen.devices.size()
                                      ? seen.devices[*device.position].peak_used_bytes
                                      : seen.peak_used_bytes;
  std::string text = fmt::format("the program {}", describe_end(end));
  if (peak_used + kNearBudgetBytes >= budget) {
    text += fmt::format(
        " after its memory reached {} of the {} budget{}: likely an OOM in words oomlab does not "
        "know",
        format_bytes(peak_used), format_bytes(budget),
        device.position ? fmt::format(" of GPU {}", device.index) : "");
  }
  if (!end.last_lines.empty())
    text += fmt::format(" (its last line: \"{}\")", end.last_lines.back());
  return text;
}

// It completed, but its output reported failed requests: said, and a framework that sized itself
// from the device's total is named with its setting.
void note_survived(const ExecConfig& config, const ExecObservation& seen, std::uint64_t budget,
                   RunResult& result) {
  ProgramOom message = *seen.oom;
  note_budget(message, budget);
  keep_notice(config, result,
              fmt::format("the program printed {} OOM line(s) and still completed: it survived "
                          "failed requests (\"{}\")",
                          seen.oom_lines, message.line));
  if (message.sizing_setting.empty()) return;
  keep_notice(config, result,
              fmt::format("{} sized its memory pool from the device's total ({} asked, the budget "
                          "is {}) and fell back to less; to start within the budget: {}",
                          message.framework, format_bytes(message.request_bytes.value_or(0)),
                          format_bytes(budget), message.sizing_setting));
}

}  // namespace

StatedFigures stated_by(const ProgramOom& message) {
  return {.process_bytes = message.process_used_bytes,
          .device_free_bytes = message.device_free_bytes};
}

OomRecord program_oom_record(const ProgramOom& message, const OomMoment& moment,
                             const ProgramRun* program) {
  const MemoryReading& at = moment.at;
  OomRecord oom;
  oom.event = moment.event;
  oom.t_ms = static_cast<double>(at.t_ns) / 1e6;
  oom.request_bytes = message.request_bytes.value_or(0);
  oom.live_bytes = at.program_bytes;
  oom.reserved_bytes = at.used_bytes;
  oom.device_free_bytes = message.device_free_bytes.value_or(at.free_bytes);
  oom.device_total_bytes = message.device_total_bytes.value_or(moment.device_total_bytes);
  const std::uint64_t budget_free =
      moment.budget_bytes > at.used_bytes ? moment.budget_bytes - at.used_bytes : 0;
  const ProgramOomDiagnosis diagnosis = diagnose_program_oom(
      message, moment.budget_bytes > 0 && at.t_ns > 0 ? std::optional(budget_free) : std::nullopt);
  oom.diagnosis.cause = diagnosis.cause;
  oom.diagnosis.evidence = diagnosis.evidence;
  oom.diagnosis.advice = diagnosis.advice;
  oom.diagnosis.free_bytes = budget_free;
  oom.program = ProgramMessage{.framework = message.framework,
                               .line = message.line,
                               .process_used_bytes = message.process_used_bytes,
                               .framework_allocated_bytes = message.framework_allocated_bytes,
                               .framework_cached_free_bytes = message.framework_cached_free_bytes,
                               .framework_limit_bytes = message.framework_limit_bytes,
                               .framework_largest_free_bytes = message.framework_largest_free_bytes,
                               .device_free_bytes = message.device_free_bytes,
                               .sizing_setting = message.sizing_setting,
                               .lines_seen = moment.lines_seen,
                               .library = message.library};
  oom.source = "program";
  for (const TracebackFrame& f : message.traceback)
    oom.frames.push_back(f.frame);
  if (!oom.frames.empty()) oom.frames_from = "traceback";
  if (program != nullptr) choose_user_frame(oom, *program, message.traceback);
  return oom;
}

void FrameworkHints::read(std::string_view text) {
  for (const OomDialect& d : Registry::global().oom_dialects()) {
    for (const auto& [word, reporter] : d.reporter_named_by) {
      if (!words.contains(word) && text.find(word) != std::string_view::npos) words.insert(word);
    }
  }
}

void name_shared_reporter(ProgramOom& oom, const FrameworkHints& hints) {
  for (const OomDialect& d : Registry::global().oom_dialects()) {
    if (d.shared_reporter.empty() || oom.framework != d.shared_reporter) continue;
    std::vector<std::string> named;
    for (const auto& [word, reporter] : d.reporter_named_by) {
      if (hints.words.contains(word)) named.push_back(reporter);
    }
    if (named.size() == 1) oom.framework = named.front();
    return;
  }
}

ExecObservation observe(const MemoryTimeline& timeline, const OomScanner& scanner,
                        const std::optional<std::pair<std::uint64_t, MemoryReading>>& oom_row,
                        const FrameworkHints& hints) {
  std::optional<ProgramOom> oom = scanner.found();
  if (oom && oom->sizing_setting.empty()) oom->sizing_setting = scanner.sizing_setting();
  if (oom) name_shared_reporter(*oom, hints);
  return ExecObservation{.peak = timeline.peak(),
                         .peak_used_bytes = timeline.peak_used_bytes(),
                         .first_bytes = timeline.first_bytes(),
                         .samples = timeline.samples(),
                         .per_process = timeline.per_process(),
                         .oom = std::move(oom),
                         .oom_lines = scanner.lines_seen(),
                         .oom_row = oom_row,
                         .free_at_start = timeline.free_at_start(),
                         .devices = timeline.per_device()};
}

RunResult exec_result_frame(const ExecConfig& config, const ExecDevices& devices) {
  RunResult result;
  result.environment = config.environment ? *config.environment : probe_host_environment();
  result.environment.devices = devices.facts();
  result.device = devices.facts().front();
  result.simulated = false;
  ProgramRun program{.command = config.command};
  for (const DeviceFacts& f : devices.facts())
    program.devices.push_back(f.index);
  program.interval_ms = static_cast<double>(config.interval.count()) / 1e3;
  result.program = std::move(program);
  return result;
}

void settle_outcome(const ExecConfig& config, const std::vector<std::uint64_t>& budgets,
                    const ProgramEnd& end, const ExecObservation& seen, RunResult& result) {
  ProgramRun& p = *result.program;
  // The device that ran out (the failing rank's, else the closest to its budget) and its budget.
  const OomDevice device = oom_device(p, budgets);
  const std::uint64_t budget = device.budget_bytes;
  p.exit_code = end.exit_code;
  p.signal = end.signal;
  p.killed = end.killed;
  p.leftovers_ended = end.leftovers_ended;
  p.peak_bytes = seen.peak.program_bytes;
  p.peak_used_bytes = seen.peak_used_bytes;
  p.first_bytes = seen.first_bytes;
  p.usage_source = seen.per_process ? "nvml-processes" : "device-free";
  p.samples = seen.samples;
  p.last_lines = end.last_lines;
  p.oom_lines = seen.oom_lines;
  if (!config.folder.empty()) {
    p.stdout_file = "stdout.txt";
    p.stderr_file = "stderr.txt";
  }
  result.events = seen.samples + (seen.oom_row ? 1 : 0);
  if (end.leftovers_ended > 0) {
    keep_notice(
        config, result,
        fmt::format("the program left {} process(es) in its group: ended", end.leftovers_ended));
  }
  if (end.ended_waiting) {
    p.waiting_ended_after_s = static_cast<double>(config.grace.count()) / 1e3;
    keep_notice(config, result,
                fmt::format("the job was left waiting after an OOM: no output and no device's "
                            "memory moved for --grace {:.3g} s, so oomlab ended it",
                            *p.waiting_ended_after_s));
  }
  if (end.stopped) {
    result.outcome = Outcome::interrupted;
  } else if (end.timed_out) {
    result.outcome = Outcome::timeout;
    result.error_message = fmt::format("the program ran past --timeout {:.3g} s and was ended{}",
                                       static_cast<double>(config.timeout->count()) / 1e3,
                                       end.killed ? " (SIGKILL, after it ignored SIGTERM)" : "");
  } else if (end.succeeded()) {
    result.outcome = Outcome::completed;
    if (seen.oom) note_survived(config, seen, budget, result);
  } else if (seen.oom) {
    result.outcome = Outcome::oom;
    result.oom = oom_record(seen, device, result);
    ++result.failed;
    const std::string& setting = result.oom->program->sizing_setting;
    if (!setting.empty()) {
      keep_notice(config, result,
                  fmt::format("{} sized its memory from the device's total ({}), not from the "
                              "budget: {}",
                              result.oom->program->framework,
                              format_bytes(result.device->total_bytes), setting));
    }
  } else {
    result.outcome = Outcome::error;
    result.error_message = failure_text(end, seen, device);
  }
  result.metrics.emplace_back("program_peak_bytes", static_cast<double>(p.peak_bytes));
  result.metrics.emplace_back("program_first_bytes", static_cast<double>(p.first_bytes));
  result.metrics.emplace_back("exit_code", static_cast<double>(end.exit_code));
}

void settle_snapshots(const ExecConfig& config, const SnapshotShim* shim, RunResult& result) {
  ProgramRun& p = *result.program;
  if (shim == nullptr) {
    p.snapshot_note = "--no-snapshot";
    return;
  }
  SnapshotFindings found = shim->findings();
  p.frameworks = std::move(found.frameworks);
  p.snapshots = std::move(found.files);
  p.snapshot_note = std::move(found.note);
  if (p.snapshots.empty()) return;  // the note names the failure
  for (const std::string& failure : found.failures)
    keep_notice(config, result,
                fmt::format("the snapshot shim failed in the program: {}", failure));
}

void forget_temporary_snapshots(RunResult& result) {
  ProgramRun& p = *result.program;
  if (p.snapshots.empty()) return;
  p.snapshot_note = fmt::format(
      "{} snapshot(s) written, then removed with the temporary folder: the run had no "
      "folder to keep them in",
      p.snapshots.size());
  p.snapshots.clear();
}

}  // namespace oomlab
