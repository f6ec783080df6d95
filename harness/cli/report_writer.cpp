#include "cli/report_writer.hpp"

#include <fmt/format.h>

#include <set>

#include "cli/command_table.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
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

// A result a folder holds: the engine's four, then each framework's (cli::ReportKind).
struct InputKind {
  enum class Engine : std::uint8_t { run, matrix, frontier, fit, registered };
  Engine engine = Engine::run;
  const cli::ReportKind* registered = nullptr;
};

struct KnownFile {
  std::string file;
  std::string schema;
  std::string name;
  InputKind kind;
};

// A folder's marks in the order they are looked for (a matrix folder's cells hold summary.json,
// so matrix.json first).
std::vector<KnownFile> known_files() {
  using Engine = InputKind::Engine;
  std::vector<KnownFile> out = {
      {"matrix.json", std::string(kMatrixSchema), "matrix", {Engine::matrix}},
      {"summary.json", std::string(kRunSchema), "run", {Engine::run}},
      {"frontier.json", std::string(kFrontierSchema), "frontier", {Engine::frontier}},
      {"fit.json", std::string(kFitSchema), "fit", {Engine::fit}}};
  for (const cli::ReportKind& k : cli::command_table().report_kinds())
    out.push_back({k.file, k.schema, k.name, {Engine::registered, &k}});
  return out;
}

// A folder by the file it holds; a file by its name or, renamed, its schema.
InputKind kind_of(const fs::path& input) {
  std::error_code ec;
  const std::vector<KnownFile> files = known_files();
  if (fs::is_directory(input, ec)) {
    for (const KnownFile& f : files) {
      if (fs::exists(input / f.file, ec)) return f.kind;
    }
    throw Error(ErrorKind::input,
                fmt::format("{}: holds none of {}", input.string(), report_files_words()));
  }
  if (!fs::exists(input, ec)) {
    throw Error(ErrorKind::input, fmt::format("{}: no such file or folder", input.string()));
  }
  for (const KnownFile& f : files) {
    if (input.filename() == f.file) return f.kind;
  }
  const nlohmann::json doc = read_json_file(input);
  const std::string schema =
      doc.is_object() && doc.contains("schema") && doc["schema"].is_string() ? doc["schema"] : "";
  for (const KnownFile& f : files) {
    if (!schema.empty() && schema == f.schema) return f.kind;
  }
  return {};
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
  const InputKind kind = kind_of(input);
  switch (kind.engine) {
    case InputKind::Engine::matrix: {
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
    case InputKind::Engine::frontier: {
      const FrontierReport frontier = load_frontier_report(input);
      const fs::path out = out_dir.empty() ? frontier.dir : out_dir;
      write_file(out / "report.html", frontier_html(frontier), written);
      write_file(out / "report.md", frontier_markdown(frontier), written);
      return written;
    }
    case InputKind::Engine::fit: {
      const FitReport fit = load_fit_report(input);
      const fs::path out = out_dir.empty() ? fit.dir : out_dir;
      write_file(out / "report.html", fit_html(fit), written);
      write_file(out / "report.md", fit_markdown(fit), written);
      return written;
    }
    case InputKind::Engine::registered: {
      const fs::path file =
          fs::is_directory(input) ? input / kind.registered->file : fs::path(input);
      for (fs::path& path :
           kind.registered->write(file, out_dir.empty() ? file.parent_path() : out_dir))
        written.files.push_back(std::move(path));
      return written;
    }
    case InputKind::Engine::run:
      break;
  }
  const RunReport run = load_run_report(input);
  write_run(run, out_dir.empty() ? run.dir : out_dir, written);
  return written;
}

std::string report_files_words() {
  const std::vector<KnownFile> files = known_files();
  std::string out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i > 0) out += i + 1 == files.size() ? " or " : ", ";
    out += fmt::format("{} (a {})", files[i].file, files[i].name);
  }
  return out;
}

std::string report_kinds_words() {
  std::vector<KnownFile> files = known_files();
  std::swap(files[0], files[1]);  // a run first, as people ask for them
  std::string out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (i > 0) out += i + 1 == files.size() ? " and " : ", ";
    out += files[i].name;
  }
  return out;
}

}  // namespace oomlab
