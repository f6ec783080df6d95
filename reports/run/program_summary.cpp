#include "reports/run/program_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/exec_run.hpp"
#include "reports/run/cache_words.hpp"
#include "reports/run/oom_place_text.hpp"
#include "reports/run/program_devices.hpp"
#include "reports/run/program_ranks.hpp"

namespace oomlab {

namespace {

std::string share_of(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string ended_text(const ProgramRun& p) {
  if (p.signal != 0) return fmt::format("killed by signal {}", p.signal);
  return fmt::format("exit code {}", p.exit_code);
}

// One what-if row: where it failed at the budget, and the card it needs for the whole process.
std::string model_row_text(const ModelRow& r, bool lower_bound) {
  const std::string at =
      r.completes_at_budget
          ? std::string("completes")
          : fmt::format("OOM at entry {}", r.first_failure_index
                                               ? format_count(*r.first_failure_index)
                                               : std::string("-"));
  std::string card = "none up to the card";
  if (r.frontier_bytes) {
    card = (lower_bound ? "≥ " : r.approximate ? "~" : "") + format_bytes(*r.frontier_bytes);
  }
  return fmt::format("{:<48} {:<20} {}{}", r.setting + (r.as_ran ? " (as it ran)" : ""), at, card,
                     r.fraction_cap ? " (under a fraction cap)" : "");
}

// One model's what-if table; none without rows.
void write_whatif(std::string& out, const ProgramModel& m) {
  if (m.whatif.empty()) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "whatif     {:<48} {:<20} {}\n", "setting", "at the model's budget",
                 "card for the whole process");
  for (const ModelRow& row : m.whatif)
    fmt::format_to(it, "           {}\n", model_row_text(row, m.lower_bound));
}

// The model's answers from the program's snapshot (on several devices, the headline device's
// first; the others in one line each).
void write_model(std::string& out, const RunResult& r) {
  auto it = std::back_inserter(out);
  const std::vector<const ProgramModel*> models = models_in_order(r);
  const ProgramModel& m = *models.front();
  fmt::format_to(it, "model      {}{} (snapshot {})\n", model_device_prefix(r, m), m.reproduction,
                 m.snapshot.filename().string());
  fmt::format_to(it, "outside    {} held outside {}'s allocator ({}); the model's budget {}\n",
                 format_bytes(m.outside_allocator_bytes), model_owner(m), m.outside_measured,
                 format_bytes(m.budget_bytes));
  write_whatif(out, m);
  if (!r.oom && !m.advice.empty()) fmt::format_to(it, "advice     {}\n", m.advice);
  if (m.remedy_check) fmt::format_to(it, "remedy     {}\n", m.remedy_check->summary);
  for (const std::string& caveat : m.caveats)
    fmt::format_to(it, "note       {}\n", caveat);
  for (const std::string& note : m.notes)
    fmt::format_to(it, "note       {}\n", note);
  for (std::size_t i = 1; i < models.size(); ++i) {
    fmt::format_to(it, "also       {}{}: {}\n", model_device_prefix(r, *models[i]),
                   models[i]->snapshot.filename().string(), models[i]->reproduction);
  }
}

void write_program_oom(std::string& out, const RunResult& r) {
  auto it = std::back_inserter(out);
  const OomRecord& oom = *r.oom;
  if (oom.program) {
    fmt::format_to(it, "oom line   {}: {}\n", oom.program->framework, oom.program->line);
    if (oom.program->lines_seen > 1)
      fmt::format_to(it, "           ({} OOM lines in its output in all)\n",
                     oom.program->lines_seen);
  }
  const std::string request = oom.request_bytes == 0 ? "not said" : format_bytes(oom.request_bytes);
  if (const DeviceRun* d = headline_device(*r.program)) {
    // The OOM record holds that device's figures, against its own budget.
    fmt::format_to(it,
                   "at         {:.2f} s on GPU {} · request {} · the program used {} there · {} "
                   "of its {} budget taken · {} of it free\n",
                   oom.t_ms / 1e3, d->index, request, format_bytes(oom.live_bytes),
                   format_bytes(oom.reserved_bytes), format_bytes(d->budget_bytes),
                   format_bytes(oom.diagnosis.free_bytes));
  } else {
    fmt::format_to(it,
                   "at         {:.2f} s · request {} · the program used {} · {} of the budget "
                   "taken · {} of it free\n",
                   oom.t_ms / 1e3, request, format_bytes(oom.live_bytes),
                   format_bytes(oom.reserved_bytes), format_bytes(oom.diagnosis.free_bytes));
  }
  fmt::format_to(it, "cause      {} ({}): {}\n", to_string(oom.diagnosis.cause), oom.source,
                 oom.diagnosis.evidence);
  fmt::format_to(it, "advice     {}\n", oom.diagnosis.advice);
  out += oom_where_lines(oom, true);
  out += oom_holder_lines(oom);
}

// The PyTorch snapshots the exec shim wrote, on one line, or why there is none.
void write_snapshots(std::string& out, const ProgramRun& p) {
  auto it = std::back_inserter(out);
  if (p.snapshots.empty()) {
    if (!p.snapshot_note.empty()) fmt::format_to(it, "snapshot   none: {}\n", p.snapshot_note);
    return;
  }
  std::vector<std::string> names;
  for (const std::filesystem::path& file : p.snapshots)
    names.push_back(names.empty() ? file.string() : file.filename().string());
  fmt::format_to(it, "snapshot   {}\n", fmt::join(names, ", "));
}

void write_program_cleanup(std::string& out, const RunResult& r) {
  if (!r.cleanup) return;
  const std::int64_t missing = r.cleanup->difference();
  const std::string verdict =
      missing <= static_cast<std::int64_t>(kDevicePageBytes)
          ? std::string("all back")
          : fmt::format("{} short{}", format_bytes(static_cast<std::uint64_t>(missing)),
                        r.cleanup->not_counted.empty() ? "" : ": " + r.cleanup->not_counted);
  fmt::format_to(std::back_inserter(out), "device     free {} before, {} after: {}\n",
                 format_bytes(r.cleanup->device_free_before),
                 format_bytes(r.cleanup->device_free_after), verdict);
}

// The first line: the budget (each device's, on several) and where the program ran.
void write_program_header(std::string& out, const RunResult& r) {
  const ProgramRun& p = *r.program;
  const bool several = p.device_runs.size() > 1;
  std::string where = "no device";
  if (r.device) {
    const std::string devices = several ? fmt::format("devices {}", fmt::join(p.devices, ", "))
                                        : fmt::format("device {}", r.device->index);
    where = fmt::format("{} ({}, driver {})", r.device->name, devices,
                        r.environment.driver_version.value_or("unknown"));
  }
  fmt::format_to(std::back_inserter(out), "oomlab exec · budget {} · {}\n",
                 several ? device_budgets_text(p) : format_bytes(r.budget_bytes), where);
}

// The program's memory at its peak: on several devices the headline device's, against its own
// budget, and the devices together without a share of any one budget.
void write_memory(std::string& out, const RunResult& r) {
  const ProgramRun& p = *r.program;
  auto it = std::back_inserter(out);
  const std::string sampling = fmt::format("{} samples every {:g} ms ({})", format_count(p.samples),
                                           p.interval_ms, p.usage_source);
  if (const DeviceRun* d = headline_device(p)) {
    fmt::format_to(it,
                   "memory     {}: peak {} · {} at the first sample that saw any · {} on the {} "
                   "devices together at the most · {}\n",
                   headline_device_label(p, *d), peak_of_budget(d->peak_bytes, d->budget_bytes),
                   format_bytes(d->first_bytes), format_bytes(p.peak_bytes), p.device_runs.size(),
                   sampling);
    return;
  }
  fmt::format_to(
      it, "memory     peak {} ({} of the budget) · {} at the first sample that saw any · {}\n",
      format_bytes(p.peak_bytes), share_of(p.peak_bytes, r.budget_bytes),
      format_bytes(p.first_bytes), sampling);
}

}  // namespace

std::string program_summary(const RunResult& r, const std::string& written_to) {
  std::string out;
  auto it = std::back_inserter(out);
  const ProgramRun& p = *r.program;
  write_program_header(out, r);
  fmt::format_to(it, "program    {}\n", command_line(p.command));
  fmt::format_to(it, "outcome    {} ({}, {:.1f} s)\n", to_string(r.outcome), ended_text(p),
                 r.duration_ms / 1e3);
  if (!r.error_message.empty()) fmt::format_to(it, "error      {}\n", r.error_message);
  out += program_ranks_lines(p);
  if (r.oom) write_program_oom(out, r);
  if (!r.models.empty()) write_model(out, r);
  for (const std::string& note : p.model_notes)
    fmt::format_to(it, "model      {}{}\n", r.models.empty() ? "none: " : "", note);
  write_memory(out, r);
  write_snapshots(out, p);
  if (p.leftovers_ended > 0)
    fmt::format_to(it, "ended      {} process(es) it left behind\n", p.leftovers_ended);
  write_program_cleanup(out, r);
  if (!written_to.empty()) fmt::format_to(it, "wrote      {}\n", written_to);
  return out;
}

}  // namespace oomlab
