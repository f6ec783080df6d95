// `oomlab report PATH...`: report.html and report.md for each run, matrix, frontier, fit or whatif
// folder given.
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "cli/commands.hpp"
#include "cli/report_writer.hpp"
#include "oomlab/error.hpp"

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

}  // namespace

int report_command(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  if (options.paths.empty()) {
    throw_usage(
        "report: give at least one run, matrix, frontier, fit or whatif folder (or its "
        "summary.json, matrix.json, frontier.json, fit.json or whatif.json)");
  }
  std::set<std::string> used;
  for (const std::string& path : options.paths) {
    if (path.empty()) throw_usage("report: an empty path");
    const WrittenReports written = write_reports(path, out_dir_for(path, options, used));
    for (const std::string& warning : written.warnings)
      err << "oomlab: warning: " << warning << '\n';
    for (const std::filesystem::path& file : written.files)
      out << file.string() << '\n';
  }
  return kExitOk;
}

}  // namespace oomlab::cli
