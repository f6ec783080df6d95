// A matrix folder read back for a report: matrix.json (oomlab.matrix.v1) as typed cells.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reports/run/run_report.hpp"

namespace oomlab {

// Minimum, median and maximum of one figure over a cell's repeats.
struct ReportSpread {
  std::uint64_t min = 0;
  std::uint64_t median = 0;
  std::uint64_t max = 0;
};

// A cell's OOM point: its summary's OOM record, or where its summary is missing, the figures
// matrix.json keeps of its first repeat that ran out of memory (no cause: "" then).
struct MatrixOomPoint {
  std::uint64_t event = 0;
  std::uint64_t step = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t request_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::string cause;
};

struct MatrixReportCell {
  std::string id;
  std::string scenario;
  std::string allocator;
  std::string outcome;  // oom, completed, error, crash, timeout, interrupted
  std::optional<std::int64_t> exit_code;
  std::string signal;  // "SIGSEGV" (or "signal 11") when a signal ended it, else empty
  double duration_ms = 0;
  std::string dir;  // relative to the matrix folder
  std::vector<std::string> last_lines;
  std::optional<MatrixOomPoint> oom;             // the OOM point the cell shows, when it has one
  std::optional<std::uint64_t> peak_live_bytes;  // from the cell's summary
  std::uint64_t repeats = 1;
  std::uint64_t oom_runs = 0;  // of the repeats, when there is a spread
  std::optional<ReportSpread> oom_live_bytes;
  std::optional<ReportSpread> oom_step;
  std::optional<ReportSpread> oom_event;
  // The run the cell links to (relative to the matrix folder): the cell's own folder when it
  // holds a summary.json, else the repeat the cell's summary came from; empty when none has one.
  std::string report_dir;
  // With repeats: each repeat's folder, or "" where it holds no summary.json.
  std::vector<std::string> repeat_report_dirs;
};

struct MatrixReport {
  std::filesystem::path dir;  // the matrix folder
  ReportEnvironment environment;
  std::vector<std::string> scenarios;   // rows, in the order of the config (then of the cells)
  std::vector<std::string> allocators;  // columns
  // The config as it was asked ("8GiB", "1", "3"): shown, never computed with.
  std::string budget;
  std::string seed;
  std::string repeat;
  std::vector<MatrixReportCell> cells;
};

// `path`: a matrix folder or its matrix.json. Error(input) naming the file when it is not one.
[[nodiscard]] MatrixReport load_matrix_report(const std::filesystem::path& path);
// The cell at (scenario, allocator), or nullptr.
[[nodiscard]] const MatrixReportCell* find_cell(const MatrixReport& matrix,
                                                const std::string& scenario,
                                                const std::string& allocator);

}  // namespace oomlab
