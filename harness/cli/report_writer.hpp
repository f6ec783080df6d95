// `oomlab report`'s work below the CLI: tells a run, a matrix, a frontier, a fit and a whatif
// apart, and writes report.html and report.md for it (for a matrix, also each cell's run report
// into the cell's folder).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace oomlab {

struct WrittenReports {
  std::vector<std::filesystem::path> files;  // in the order written: the input's own first
  std::vector<std::string> warnings;         // one line each: cell reports that could not be made
};

// `input`: a run, matrix, frontier, fit or whatif folder, or the summary.json, matrix.json,
// frontier.json, fit.json or whatif.json in it. `out_dir` empty:
// beside the input. Cell reports go to `<out>/<cell dir>/`, so the matrix report's links hold.
// Throws Error(input) naming the bad file, Error(io) when an output cannot be written.
[[nodiscard]] WrittenReports write_reports(const std::filesystem::path& input,
                                           const std::filesystem::path& out_dir);

// The results `report` reads, in words: "matrix.json (a matrix), summary.json (a run), ...,
// whatif.json (a whatif)", and "matrix, run, frontier, fit and whatif" (the frameworks' kinds
// included: cli::ReportKind).
[[nodiscard]] std::string report_files_words();
[[nodiscard]] std::string report_kinds_words();

struct RunReport;
// A run's report.html and report.md, from a run already read (and re-diagnosed), into `out_dir`.
void write_run_reports(const RunReport& run, const std::filesystem::path& out_dir,
                       WrittenReports& written);

}  // namespace oomlab
