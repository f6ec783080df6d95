#include "cli/report_writer.hpp"

#include <fmt/format.h>

#include <array>
#include <set>

#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "record/formats.hpp"
#include "reports/matrix/matrix_report.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/run_report.hpp"
#include "reports/searches/fit_report.hpp"
#include "reports/searches/frontier_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/markdown_report.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text, WrittenReports& written) {
  write_output_file(path, text);
  written.files.push_back(path);
}

enum class InputKind : std::uint8_t { run, matrix, frontier, fit, whatif };

// A folder by the file it holds (a matrix folder's cells hold summary.json, so matrix.json first);
// a file by its name or, renamed, its schema.
InputKind kind_of(const fs::path& input) {
  std::error_code ec;
  static const std::array<std::pair<const char*, InputKind>, 5> kFiles = {{
      {"matrix.json", InputKind::matrix},
      {"summary.json", InputKind::run},
      {"frontier.json", InputKind::frontier},
      {"fit.json", InputKind::fit},
      {"whatif.json", InputKind::whatif},
  }};
  if (fs::is_directory(input, ec)) {
    for (const auto& [file, kind] : kFiles) {
      if (fs::exists(input / file, ec)) return kind;
    }
    throw Error(ErrorKind::input,
                fmt::format("{}: holds none of matrix.json (a matrix), summary.json (a run), "
                            "frontier.json (a frontier), fit.json (a fit) or whatif.json (a "
                            "whatif)",
                            input.string()));
  }
  if (!fs::exists(input, ec)) {
    throw Error(ErrorKind::input, fmt::format("{}: no such file or folder", input.string()));
  }
  for (const auto& [file, kind] : kFiles) {
    if (input.filename() == file) return kind;
  }
  const nlohmann::json doc = read_json_file(input);
  const std::string schema =
      doc.is_object() && doc.contains("schema") && doc["schema"].is_string() ? doc["schema"] : "";
  if (schema == kMatrixSchema) return InputKind::matrix;
  if (schema == kFrontierSchema) return InputKind::frontier;
  if (schema == kFitSchema) return InputKind::fit;
  if (schema == kWhatIfSchema) return InputKind::whatif;
  return InputKind::run;
}

void write_run(const RunReport& run, const fs::path& dir, WrittenReports& written) {
  write_run_reports(run, dir, written);
}

// Each cell's runs, reported where the matrix report's links point. A run whose summary cannot
// be read loses its link and gets a warning, rather than costing the whole matrix its report.
void write_cells(MatrixReport& matrix, const fs::path& out, WrittenReports& written) {
  std::set<std::string> done;
  const auto report = [&](const MatrixReportCell& cell, std::string& dir) {
    if (dir.empty() || done.contains(dir)) return;
    try {
      write_run(load_run_report(matrix.dir / dir), out / dir, written);
      done.insert(dir);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::input) throw;
      written.warnings.push_back(fmt::format("no report for cell {}: {}", cell.id, e.what()));
      dir.clear();
    }
  };
  for (MatrixReportCell& cell : matrix.cells) {
    report(cell, cell.report_dir);
    for (std::string& dir : cell.repeat_report_dirs)
      report(cell, dir);
  }
}

}  // namespace

void write_run_reports(const RunReport& run, const fs::path& out_dir, WrittenReports& written) {
  write_file(out_dir / "report.html", run_html(run), written);
  write_file(out_dir / "report.md", run_markdown(run), written);
}

WrittenReports write_reports(const fs::path& input, const fs::path& out_dir) {
  WrittenReports written;
  switch (kind_of(input)) {
    case InputKind::matrix: {
      MatrixReport matrix = load_matrix_report(input);
      const fs::path out = out_dir.empty() ? matrix.dir : out_dir;
      WrittenReports cells;
      write_cells(matrix, out, cells);
      write_file(out / "report.html", matrix_html(matrix), written);
      write_file(out / "report.md", matrix_markdown(matrix), written);
      written.files.insert(written.files.end(), cells.files.begin(), cells.files.end());
      written.warnings = std::move(cells.warnings);
      return written;
    }
    case InputKind::frontier: {
      const FrontierReport frontier = load_frontier_report(input);
      const fs::path out = out_dir.empty() ? frontier.dir : out_dir;
      write_file(out / "report.html", frontier_html(frontier), written);
      write_file(out / "report.md", frontier_markdown(frontier), written);
      return written;
    }
    case InputKind::fit: {
      const FitReport fit = load_fit_report(input);
      const fs::path out = out_dir.empty() ? fit.dir : out_dir;
      write_file(out / "report.html", fit_html(fit), written);
      write_file(out / "report.md", fit_markdown(fit), written);
      return written;
    }
    case InputKind::whatif: {
      // whatif's own pages, as `whatif --out` wrote them.
      const fs::path file = fs::is_directory(input) ? input / "whatif.json" : input;
      const WhatIfResult whatif = read_whatif(file);
      const fs::path out = out_dir.empty() ? file.parent_path() : out_dir;
      write_file(out / "report.html", whatif_html(whatif), written);
      write_file(out / "report.md", whatif_markdown(whatif), written);
      return written;
    }
    case InputKind::run:
      break;
  }
  const RunReport run = load_run_report(input);
  write_run(run, out_dir.empty() ? run.dir : out_dir, written);
  return written;
}

}  // namespace oomlab
