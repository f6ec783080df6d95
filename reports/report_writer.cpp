#include "reports/report_writer.hpp"

#include <fmt/format.h>

#include <set>

#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "record/formats.hpp"
#include "reports/html_report.hpp"
#include "reports/markdown_report.hpp"
#include "reports/matrix_report.hpp"
#include "reports/report_input.hpp"
#include "reports/run_report.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text, WrittenReports& written) {
  write_output_file(path, text);
  written.files.push_back(path);
}

bool is_matrix(const fs::path& input) {
  std::error_code ec;
  if (fs::is_directory(input, ec)) {
    if (fs::exists(input / "matrix.json", ec)) return true;
    if (!fs::exists(input / "summary.json", ec)) {
      throw Error(ErrorKind::input, fmt::format("{}: holds neither matrix.json (a matrix) nor "
                                                "summary.json (a run)",
                                                input.string()));
    }
    return false;
  }
  if (!fs::exists(input, ec)) {
    throw Error(ErrorKind::input, fmt::format("{}: no such file or folder", input.string()));
  }
  if (input.filename() == "matrix.json") return true;
  const nlohmann::json doc = read_json_file(input);
  return doc.is_object() && doc.contains("schema") && doc["schema"] == kMatrixSchema;
}

void write_run(const RunReport& run, const fs::path& dir, WrittenReports& written) {
  write_file(dir / "report.html", run_html(run), written);
  write_file(dir / "report.md", run_markdown(run), written);
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

WrittenReports write_reports(const fs::path& input, const fs::path& out_dir) {
  WrittenReports written;
  if (is_matrix(input)) {
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
  const RunReport run = load_run_report(input);
  write_run(run, out_dir.empty() ? run.dir : out_dir, written);
  return written;
}

}  // namespace oomlab
