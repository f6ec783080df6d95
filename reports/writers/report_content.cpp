#include "reports/writers/report_content.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <map>

#include "analysis/oom_analysis.hpp"
#include "exec/exec_run.hpp"
#include "oomlab/units.hpp"
#include "reports/run/cache_words.hpp"
#include "reports/run/oom_place_text.hpp"
#include "reports/run/program_devices.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/params_text.hpp"

namespace oomlab {

namespace {

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", 100.0 * fraction);
}

std::string spread_text(const char* what, const ReportSpread& s, bool bytes) {
  const auto show = [bytes](std::uint64_t v) { return bytes ? format_bytes(v) : format_count(v); };
  return fmt::format("{} {} .. {} (median {})", what, show(s.min), show(s.max), show(s.median));
}

std::string duration_text(double ms) {
  if (ms < 10) return fmt::format("{:.1f} ms", ms);
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  return fmt::format("{:.1f} s", ms / 1000);
}

// The framework's key figures, as its out-of-memory error gives them.
std::string cache_figures(const CacheState& c, std::uint64_t request_bytes) {
  const CacheWords& words = words_of(c);
  const auto size = [&](std::uint64_t bytes) { return size_in(words, bytes); };
  // What the framework says it tried: the device request that failed, else the program's.
  const std::uint64_t tried = c.failed_device_bytes != 0 ? c.failed_device_bytes : request_bytes;
  if (c.pool) {
    return fmt::format("cudaMallocAsync backend: {} allocated, requested {}",
                       size(c.allocated_bytes), size(tried));
  }
  return fmt::format(
      "tried to allocate {} · {} allocated by {} · {} reserved but unallocated{}", size(tried),
      size(c.allocated_bytes), words.owner,
      size(c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0),
      c.allowed_bytes != 0 ? fmt::format(" · {} allowed", size(c.allowed_bytes)) : std::string());
}

// exec: the line the program printed, with its framework.
std::string program_line(const OomRecord& oom) {
  if (!oom.program) return "";
  return fmt::format("{}: {}", oom.program->framework, oom.program->line);
}

// On several devices: the peak of the device the headline speaks of against its own budget, and
// each device against its own.
std::vector<ReportRow> device_peak_rows(const ProgramRun& p, const DeviceRun& d) {
  std::vector<ReportRow> rows = {
      {"Peak",
       fmt::format("{} on {}; {} on the {} devices together ({})",
                   peak_of_budget(d.peak_bytes, d.budget_bytes), headline_device_label(p, d),
                   format_bytes(p.peak_bytes), p.device_runs.size(), p.usage_source)},
      {"Budget taken at the most",
       fmt::format("{} on GPU {}", format_bytes(d.peak_used_bytes), d.index)}};
  for (const DeviceRun& each : p.device_runs)
    rows.push_back({fmt::format("GPU {}", each.index), device_figures(each)});
  return rows;
}

std::vector<ReportRow> program_run_rows(const RunReport& run) {
  const ProgramRun& p = *run.program;
  const DeviceRun* device = headline_device(p);
  std::vector<ReportRow> rows = {
      {"Program", command_line(p.command)},
      {"Budget", device ? device_budgets_text(p) : format_bytes(run.budget_bytes)},
      {"Outcome", outcome_label(run.outcome)},
      {"Ended", p.signal != 0 ? fmt::format("killed by signal {}", p.signal)
                              : fmt::format("exit code {}", p.exit_code)}};
  if (device) {
    const std::vector<ReportRow> peaks = device_peak_rows(p, *device);
    rows.insert(rows.end(), peaks.begin(), peaks.end());
  } else {
    rows.push_back({"Peak", fmt::format("{} ({})", format_bytes(p.peak_bytes), p.usage_source)});
    rows.push_back({"Budget taken at the most", format_bytes(p.peak_used_bytes)});
  }
  rows.push_back({"Duration", fmt::format("{:.1f} ms", run.duration_ms)});
  rows.push_back({"Samples", format_count(p.samples)});
  if (!run.error_message.empty()) rows.push_back({"Error", run.error_message});
  return rows;
}

}  // namespace

std::vector<ReportRow> environment_rows(const ReportEnvironment& env) {
  std::string oomlab = env.oomlab_version.empty() ? "-" : env.oomlab_version;
  if (!env.oomlab_git.empty()) oomlab += fmt::format(" (git {})", env.oomlab_git);
  return {{"GPU", env.simulated && env.gpu.starts_with("none") ? "none: simulated allocator (sim)"
                                                               : env.gpu},
          {"Driver", env.driver},
          {"CUDA runtime", cuda_version_text(env.cuda_runtime)},
          {"CUDA driver API", cuda_version_text(env.cuda_driver_api)},
          {"oomlab", oomlab},
          {"Host", env.host.empty() ? "-" : env.host}};
}

std::vector<ReportRow> oom_rows(const OomRecord& oom) {
  const std::string program = program_line(oom);
  std::vector<ReportRow> rows = {
      {"Request", format_bytes(oom.request_bytes)},
      {"Where", fmt::format("{} · step {}{} · {:.3f} ms after the start", oom_where(oom), oom.step,
                            oom.phase.empty() ? "" : " · phase " + oom.phase, oom.t_ms)},
      program.empty()
          ? ReportRow{"Live", fmt::format("{} in {} blocks", format_bytes(oom.live_bytes),
                                          format_count(oom.live_count))}
          : ReportRow{"Program's memory", format_bytes(oom.live_bytes) + " (NVML)"},
      {program.empty() ? "Reserved" : "Budget taken", format_bytes(oom.reserved_bytes)}};
  if (!program.empty()) rows.insert(rows.begin(), {"Program's line", program});
  std::string free = "not recorded";
  {
    free = format_bytes(oom.device_free_bytes);
    // A summary written before the total had its field: 0, no device has none.
    if (oom.device_total_bytes != 0) free += " of " + format_bytes(oom.device_total_bytes);
  }
  rows.push_back({"Device free", free});
  std::string largest = "not probed";
  if (oom.largest_free_bytes) {
    // The probe bisects to the backend's granularity: 0 means no such piece was left.
    largest = *oom.largest_free_bytes == 0 ? "under " + format_bytes(oom.granularity_bytes)
                                           : format_bytes(*oom.largest_free_bytes);
  }
  rows.push_back({"Largest free block", largest});
  const Diagnosis& d = oom.diagnosis;
  if (d.fragmentation) rows.push_back({"Fragmentation", percent(*d.fragmentation)});
  rows.push_back({"Cause", std::string(to_string(d.cause))});
  std::string source = oom.source.empty() ? "-" : oom.source;
  if (oom.error && !oom.error->empty()) source += " (" + *oom.error + ")";
  rows.push_back({"Source", source});
  if (!d.evidence.empty()) rows.push_back({"Evidence", d.evidence});
  if (oom.cache) {
    const std::string& owner = words_of(*oom.cache).owner;
    rows.push_back({owner, cache_figures(*oom.cache, oom.request_bytes)});
    rows.push_back({owner + " says", cache_message(oom)});
  }
  if (const std::string where = oom_where_text(oom); !where.empty())
    rows.push_back({"In the code", where});
  if (!d.advice.empty()) rows.push_back({"Advice", d.advice});
  return rows;
}

std::vector<ReportRow> largest_live_rows(const OomRecord& oom) {
  std::vector<ReportRow> rows;
  for (const ProgramBlock& b : oom.largest_live) {
    rows.push_back({format_bytes(b.bytes),
                    fmt::format("entry {}{}", format_count(b.trace_index),
                                b.frames.empty() ? std::string() : " · " + b.frames.front())});
  }
  return rows;
}

std::vector<ReportRow> run_rows(const RunReport& run) {
  if (run.is_program()) return program_run_rows(run);
  std::string allocator = run.allocator;
  if (run.allocator_options.is_object() && !run.allocator_options.empty()) {
    allocator +=
        " (" + params_text(allocator_option_spec(run.allocator), run.allocator_options) + ")";
  }
  std::vector<ReportRow> rows = {
      {"Scenario", run.scenario},
      {"Parameters", params_text(scenario_param_spec(run.scenario), run.scenario_params)},
      {"Seed", std::to_string(run.seed)},
      {"Allocator", allocator},
      {"Budget", format_bytes(run.budget_bytes)},
      {"Outcome", outcome_label(run.outcome)},
      {"Peak live", format_bytes(run.peak_live_bytes)},
      {"Peak reserved", format_bytes(run.peak_reserved_bytes)},
      {"Allocations", fmt::format("{} ({} freed, {} failed)", format_count(run.allocations),
                                  format_count(run.frees), format_count(run.failed))},
      {"Duration", fmt::format("{:.1f} ms", run.duration_ms)},
      {"Events", format_count(run.timeline.events + run.timeline.after_oom)}};
  if (!run.error_message.empty()) rows.push_back({"Error", run.error_message});
  return rows;
}

std::vector<ReportRow> model_rows(const ProgramModel& m) {
  std::vector<ReportRow> rows = {
      {"Reproduced", m.reproduction.empty() ? "-" : m.reproduction},
      {fmt::format("Outside {}'s allocator", model_owner(m)),
       fmt::format("{} ({})", format_bytes(m.outside_allocator_bytes), m.outside_measured)},
      {"The model's budget",
       fmt::format("{}: the run's budget less the memory outside the allocator",
                   format_bytes(m.budget_bytes))}};
  if (!m.advice.empty()) rows.push_back({"Advice", m.advice});
  if (m.remedy_check) rows.push_back({"Remedy checked", m.remedy_check->summary});
  rows.push_back({"Snapshot", m.snapshot.empty() ? "-" : m.snapshot.string()});
  return rows;
}

std::vector<std::vector<std::string>> model_table(const ProgramModel& m) {
  std::vector<std::vector<std::string>> rows = {{"Setting", model_settings_heading(m),
                                                 "At the budget", "Card for the whole process",
                                                 "Allocator's frontier"}};
  // A trace that stops at the OOM only bounds its frontiers from below.
  const auto size = [&](const std::optional<std::uint64_t>& bytes, bool approximate) {
    if (!bytes) return std::string("none up to the card");
    return (m.lower_bound ? "≥ " : approximate ? "~" : "") + format_bytes(*bytes);
  };
  for (const ModelRow& r : m.whatif) {
    std::string setting = r.setting;
    if (r.as_ran) setting += " (as the program ran)";
    const std::string at =
        r.completes_at_budget
            ? std::string("completes")
            : (r.first_failure_index
                   ? fmt::format("OOM at entry {}", format_count(*r.first_failure_index))
                   : std::string("OOM"));
    rows.push_back({setting,
                    r.settings.empty()
                        ? (m.owner.empty() ? fmt::format("({}'s defaults)", model_owner(m))
                                           : std::string("(nothing set)"))
                        : r.settings,
                    at, size(r.frontier_bytes, r.approximate),
                    size(r.model_frontier_bytes, r.approximate) +
                        (r.fraction_cap ? " (a fraction cap)" : "")});
  }
  return rows;
}

std::vector<std::string> model_caveats(const ProgramModel& m) {
  std::vector<std::string> out = m.caveats;
  out.insert(out.end(), m.notes.begin(), m.notes.end());
  return out;
}

std::vector<ReportRow> json_rows(const nlohmann::json& object) {
  std::vector<ReportRow> rows;
  if (!object.is_object()) return rows;
  for (const auto& [key, value] : object.items())
    rows.push_back({key, display_value(key, value)});
  return rows;
}

std::vector<ReportRow> metric_rows(const RunReport& run) {
  // As summary.json holds them: whole numbers as integers, so that counts read as counts.
  return json_rows(nlohmann::json::parse(metrics_json(run.metrics).dump()));
}

std::string run_title(const RunReport& run) {
  if (run.is_program()) {
    std::string command = command_line(run.program->command);
    if (command.size() > 80) command = command.substr(0, 77) + "...";
    return "exec: " + command;
  }
  return fmt::format("{} on {}", run.scenario, run.allocator);
}

std::string outcome_label(std::string_view outcome) {
  if (outcome == "oom") return "OOM";
  return std::string(outcome);
}

std::string outcome_label(Outcome outcome) {
  return outcome_label(to_string(outcome));
}

std::vector<std::string> run_notices(const RunReport& run) {
  std::vector<std::string> out = run.notices;
  out.insert(out.end(), run.notes.begin(), run.notes.end());
  return out;
}

std::string run_headline(const RunReport& run) {
  // On several devices, the budget of the device the OOM's figures are of (each's, without one).
  const DeviceRun* device = run.program ? headline_device(*run.program) : nullptr;
  if (!run.oom) {
    return fmt::format("{} · budget {}", outcome_label(run.outcome),
                       device ? device_budgets_text(*run.program) : format_bytes(run.budget_bytes));
  }
  const std::string budget =
      device ? fmt::format("{} on GPU {}", format_bytes(device->budget_bytes), device->index)
             : format_bytes(run.budget_bytes);
  return fmt::format(
      "OOM at {} (step {}) asking for {} with {} live{}: cause {} · budget {}{}",
      oom_where(*run.oom), run.oom->step, format_bytes(run.oom->request_bytes),
      format_bytes(run.oom->live_bytes), device ? fmt::format(" on GPU {}", device->index) : "",
      to_string(run.oom->diagnosis.cause), budget, run.platform.simulated ? " · simulated" : "");
}

std::string model_heading(const RunResult& run, const ProgramModel& model) {
  const std::string device = model_device_prefix(run, model);
  const std::string owner = model_owner(model);
  if (device.empty())
    return fmt::format("The model of {}'s allocator (the program's snapshot)", owner);
  return fmt::format("The model of {}'s allocator (the snapshot of the process on {})", owner,
                     device.substr(0, device.size() - 2));
}

std::string timeline_caption(const Timeline& timeline) {
  if (!timeline.missing.empty()) return timeline.missing;
  const std::string drawn =
      timeline.live.size() >= timeline.events
          ? std::string("every event drawn")
          : fmt::format(
                "drawn as {} points: the minimum and maximum of each bucket of events, so "
                "peaks survive",
                format_count(timeline.live.size()));
  const std::string after =
      timeline.after_oom == 0
          ? std::string()
          : fmt::format(
                " It ends at the OOM: the {} events after it (the run freeing what it "
                "held) are not drawn.",
                format_count(timeline.after_oom));
  return fmt::format("{} events (seq {}..{}), {}. Peak live {}, peak reserved {}.{}",
                     format_count(timeline.events), format_count(timeline.first_seq),
                     format_count(timeline.last_seq), drawn, format_bytes(timeline.peak_live_bytes),
                     format_bytes(timeline.peak_reserved_bytes), after);
}

std::vector<std::string> cell_lines(const MatrixReportCell& cell) {
  std::vector<std::string> lines;
  if (cell.oom) {
    lines.push_back(fmt::format("live {} at OOM", format_bytes(cell.oom->live_bytes)));
    lines.push_back(
        fmt::format("step {} · event {}", cell.oom->step, format_count(cell.oom->event)));
    std::string asked = "request " + format_bytes(cell.oom->request_bytes);
    if (!cell.oom->cause.empty()) asked += " · " + cell.oom->cause;
    lines.push_back(asked);
  } else if (cell.peak_live_bytes) {
    lines.push_back("peak live " + format_bytes(*cell.peak_live_bytes));
  }
  if (cell.repeats > 1) {
    lines.push_back(fmt::format("{} runs, {} OOM", cell.repeats, cell.oom_runs));
    if (cell.oom_live_bytes) lines.push_back(spread_text("live", *cell.oom_live_bytes, true));
    if (cell.oom_step) lines.push_back(spread_text("step", *cell.oom_step, false));
  }
  if (cell.outcome != "oom" && cell.outcome != "completed") {
    if (!cell.signal.empty()) {
      lines.push_back("ended by " + cell.signal);
    } else if (cell.exit_code) {
      lines.push_back(fmt::format("exit code {}", *cell.exit_code));
    }
    if (!cell.last_lines.empty()) lines.push_back(cell.last_lines.back());
  }
  lines.push_back(duration_text(cell.duration_ms));
  return lines;
}

std::vector<ReportRow> matrix_config_rows(const MatrixReport& matrix) {
  return {{"Scenarios", fmt::format("{}", matrix.scenarios.size())},
          {"Allocators", fmt::format("{}", matrix.allocators.size())},
          {"Budget", matrix.budget.empty() ? "-" : matrix.budget},
          {"Seed", matrix.seed.empty() ? "-" : matrix.seed},
          {"Repeats per cell", matrix.repeat.empty() ? "1" : matrix.repeat},
          {"Cells", std::to_string(matrix.cells.size())}};
}

std::string matrix_counts_line(const MatrixReport& matrix) {
  std::map<std::string, std::size_t, std::less<>> counts;
  for (const MatrixReportCell& cell : matrix.cells)
    ++counts[cell.outcome];
  const auto count = [&](std::string_view outcome) {
    const auto it = counts.find(outcome);
    return it == counts.end() ? std::size_t{0} : it->second;
  };
  std::vector<std::string> failures;
  std::size_t failed = 0;
  for (const auto& [outcome, n] : counts) {
    if (outcome == "oom" || outcome == "completed") continue;
    failures.push_back(fmt::format("{} {}", n, outcome));
    failed += n;
  }
  return fmt::format("{} cells: {} OOM as provoked · {} completed · {}", matrix.cells.size(),
                     count("oom"), count("completed"),
                     failed == 0
                         ? std::string("none failed")
                         : fmt::format("{} failed ({})", failed, fmt::join(failures, ", ")));
}

std::string outcome_legend(std::string_view outcome) {
  if (outcome == "oom") return "OOM (provoked: expected)";
  if (outcome == "completed") return "completed";
  return fmt::format("{} (failed)", outcome);
}

std::string url_path(std::string_view relative) {
  std::string out;
  for (const char c : relative) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

}  // namespace oomlab
