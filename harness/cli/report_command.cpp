// `oomlab report PATH...`: report.html and report.md for each run, matrix, frontier, fit or whatif
// folder given.
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "cli/commands.hpp"
#include "cli/remodel.hpp"
#include "cli/report_writer.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab::cli {

namespace {

// With several inputs and one --out, each input gets a folder of its own there, named after it.
std::filesystem::path out_dir_for(const std::filesystem::path& input, const ReportOptions& options,
                                  std::set<std::string>& used) {
  if (options.out.empty()) return {};
  if (options.paths.size() == 1) return options.out;
  std::filesystem::path folder = input;
  if (!std::filesystem::is_directory(folder)) folder = folder.parent_path();
  std::string name = std::filesystem::absolute(folder).lexically_normal().filename().string();
  if (name.empty()) name = "report";
  std::string unique = name;
  for (int n = 2; !used.insert(unique).second; ++n)
    unique = fmt::format("{}-{}", name, n);
  return std::filesystem::path(options.out) / unique;
}

// --remodel: the run re-diagnosed, its lines on the console, its report and remodel.json (the
// new record, oomlab.run.v1) beside it; summary.json stays as the run wrote it.
WrittenReports write_remodelled(const std::filesystem::path& input,
                                const std::filesystem::path& out_dir, std::ostream& out) {
  const RunReport run = remodel_run(input);
  const std::filesystem::path dir = out_dir.empty() ? run.dir : out_dir;
  out << fmt::format("{}:\n", run.dir.string());
  for (std::size_t i = 0; i < run.provenance.size(); ++i)
    out << (i == 0 ? "  " : "    ") << run.provenance[i] << '\n';
  WrittenReports written;
  write_run_reports(run, dir, written);
  const Invocation invocation{.argv = {"oomlab", "report", "--remodel", input.string()},
                              .folder = run.dir};
  write_output_file(dir / "remodel.json", summary_json(run, invocation).dump(2) + "\n");
  written.files.push_back(dir / "remodel.json");
  return written;
}

}  // namespace

int report_command(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (options.paths.empty()) {
    throw_usage(fmt::format("report: give at least one {} folder (or its file: {})",
                            report_kinds_words(), report_files_words()));
  }
  std::set<std::string> used;
  for (const std::string& path : options.paths) {
    if (path.empty()) throw_usage("report: an empty path");
    const std::filesystem::path out_dir = out_dir_for(path, options, used);
    const WrittenReports written =
        options.remodel ? write_remodelled(path, out_dir, out) : write_reports(path, out_dir);
    for (const std::string& warning : written.warnings)
      err << "oomlab: warning: " << warning << '\n';
    for (const std::filesystem::path& file : written.files)
      out << file.string() << '\n';
  }
  return kExitOk;
}

}  // namespace oomlab::cli
