#include "cli/run_outputs.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <span>
#include <sstream>

#include "cli/out_folder.hpp"
#include "cli/output_flag.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "reports/run/human_summary.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// What --force removes from a folder before the run: a run's files and the reports made of them.
constexpr std::array<std::string_view, 5> kReplacedFiles = {
    "summary.json", "events.csv", "soak.json", "report.html", "report.md"};

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

}  // namespace

void check_destinations(const RunOptions& o) {
  check_destination("--json", o.json);
  check_destination("--csv", o.csv);
  if (to_stdout(o.csv)) {
    throw_usage(
        "--csv: '-' is not taken: events.csv goes to a file (it can hold millions of rows); "
        "--json - prints the summary on stdout");
  }
  check_destination("--junit", o.junit);
  if (to_stdout(o.json) && to_stdout(o.junit))
    throw_usage("only one of --json and --junit can be '-' (stdout)");
}

std::string_view stdout_output(const RunOptions& o) {
  return to_stdout(o.junit) ? o.junit : o.json;
}

std::optional<fs::path> prepare_run_folder(const RunOptions& o, std::string_view allocator) {
  if (o.no_out) return std::nullopt;
  const fs::path folder =
      o.out.empty() ? default_run_folder(o.scenario, allocator) : fs::path(o.out);
  // Two runs in one folder would mix: refused, or with --force the old run's files go first.
  claim_out_folder(folder, o.force,
                   {.what = "a run", .marks = kRunFolderFiles, .replaced = kReplacedFiles});
  return folder;
}

void write_outputs(const RunResult& result, const RunRecord& record, std::ostream& out,
                   std::ostream& err, OutputFailures& failures) {
  const RunOptions& o = record.options;
  Invocation invocation = record.invocation;
  if (record.folder) invocation.folder = *record.folder;
  const std::string summary = summary_json(result, invocation).dump(2) + "\n";
  if (to_stdout(o.json)) out << summary;  // what CI reads, whatever the disk says
  if (!result.events_error.empty()) failures.add(result.events_error);
  std::vector<std::string> written;
  std::error_code ec;
  if (record.folder) {
    if (fs::exists(*record.folder / "events.csv", ec)) written.emplace_back("events.csv");
    if (failures.attempt([&] { write_output_file(*record.folder / "summary.json", summary); }))
      written.emplace_back("summary.json");
  }
  if (to_file(o.json)) failures.attempt([&] { write_output_file(o.json, summary); });
  if (!o.csv.empty() && !written.empty() && written.front() == "events.csv")
    failures.attempt([&] { copy_output_file(*record.folder / "events.csv", o.csv); });
  if (!o.quiet) {
    const std::string where = written.empty() ? std::string()
                                              : fmt::format("{}/ ({})", record.folder->string(),
                                                            fmt::join(written, ", "));
    words_stream(stdout_output(o), out, err) << human_summary(result, where);
  }
}

void write_run_junit(const RunResult& result, const std::string& path, int code,
                     const std::string& why, std::ostream& out) {
  // A program run is the case "exec" of its own class, as it was before it had its own fields.
  JUnitCase c{.classname = "oomlab.run." + (result.is_program() ? "exec" : result.scenario),
              .name = result.is_program() ? "exec" : result.allocator,
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
  std::ostringstream xml;
  write_junit(xml, "oomlab run", std::span<const JUnitCase>(&c, 1));
  emit_output(path, xml.str(), out);
}

}  // namespace oomlab::cli
