#include "reports/program_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace oomlab {

namespace {

std::string percent_of(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string ended_text(const ProgramRun& p) {
  if (p.signal != 0) return fmt::format("killed by signal {}", p.signal);
  return fmt::format("exit code {}", p.exit_code);
}

void write_oom(std::string& out, const RunResult& r) {
  auto it = std::back_inserter(out);
  const OomRecord& oom = *r.oom;
  if (oom.program) {
    fmt::format_to(it, "oom line   {}: {}\n", oom.program->framework, oom.program->line);
    if (oom.program->lines_seen > 1)
      fmt::format_to(it, "           ({} OOM lines in its output in all)\n",
                     oom.program->lines_seen);
  }
  fmt::format_to(it,
                 "at         {:.2f} s · request {} · the program used {} · {} of the budget "
                 "taken · {} of it free\n",
                 oom.t_ms / 1e3,
                 oom.request_bytes == 0 ? "not said" : format_bytes(oom.request_bytes),
                 format_bytes(oom.live_bytes), format_bytes(oom.reserved_bytes),
                 format_bytes(oom.diagnosis.free_bytes));
  fmt::format_to(it, "cause      {} ({}): {}\n", to_string(oom.diagnosis.cause), oom.source,
                 oom.diagnosis.evidence);
  fmt::format_to(it, "advice     {}\n", oom.diagnosis.advice);
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

void write_cleanup(std::string& out, const RunResult& r) {
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

}  // namespace

std::string program_summary(const RunResult& r, const std::string& written_to) {
  std::string out;
  auto it = std::back_inserter(out);
  const ProgramRun& p = *r.program;
  const std::string where =
      r.device ? fmt::format("{} (device {}, driver {})", r.device->name, r.device->index,
                             r.environment.driver_version.value_or("unknown"))
               : std::string("no device");
  fmt::format_to(it, "oomlab exec · budget {} · {}\n", format_bytes(r.budget_bytes), where);
  fmt::format_to(it, "program    {}\n", r.params.text("command"));
  fmt::format_to(it, "outcome    {} ({}, {:.1f} s)\n", to_string(r.outcome), ended_text(p),
                 r.duration_ms / 1e3);
  if (!r.error_message.empty()) fmt::format_to(it, "error      {}\n", r.error_message);
  if (r.oom) write_oom(out, r);
  fmt::format_to(it,
                 "memory     peak {} ({} of the budget) · {} at the first sample that saw any · "
                 "{} samples every {:g} ms ({})\n",
                 format_bytes(p.peak_bytes), percent_of(p.peak_bytes, r.budget_bytes),
                 format_bytes(p.first_bytes), format_count(p.samples), p.interval_ms,
                 p.usage_source);
  write_snapshots(out, p);
  if (p.leftovers_ended > 0)
    fmt::format_to(it, "ended      {} process(es) it left behind\n", p.leftovers_ended);
  write_cleanup(out, r);
  if (!written_to.empty()) fmt::format_to(it, "wrote      {}\n", written_to);
  return out;
}

}  // namespace oomlab
