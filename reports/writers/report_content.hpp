// What a report says, once, as rows and lines of plain text: the HTML and Markdown writers only
// lay these out, so both versions of a report carry the same content.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "reports/matrix/matrix_report.hpp"
#include "reports/run/run_report.hpp"

namespace oomlab {

struct ReportRow {
  std::string label;
  std::string value;
};

// The outcomes a matrix cell can have, in the order the legend lists them.
inline constexpr std::array<std::string_view, 6> kOutcomes = {"oom",   "completed", "error",
                                                              "crash", "timeout",   "interrupted"};

[[nodiscard]] std::vector<ReportRow> environment_rows(const ReportEnvironment& env);
[[nodiscard]] std::vector<ReportRow> oom_rows(const OomRecord& oom);
// A replayed program's largest live blocks at the OOM: the size, then the trace entry that
// allocated it and its innermost frame.
[[nodiscard]] std::vector<ReportRow> largest_live_rows(const OomRecord& oom);
// A scenario run's scenario, parameters, allocator and figures; a program run's command, how it
// ended and its memory.
[[nodiscard]] std::vector<ReportRow> run_rows(const RunReport& run);
// exec: what the model said of the program's snapshot (reproduced, the memory outside PyTorch's
// allocator, the advice, --check-remedy's rerun), and its what-if table at the run's budget
// (header first), and what the snapshot cannot know.
[[nodiscard]] std::vector<ReportRow> model_rows(const ProgramModel& model);
[[nodiscard]] std::vector<std::vector<std::string>> model_table(const ProgramModel& model);
[[nodiscard]] std::vector<std::string> model_caveats(const ProgramModel& model);
// The model's section title; on several devices it names the device of the snapshot's process.
[[nodiscard]] std::string model_heading(const RunResult& run, const ProgramModel& model);
// Metrics by name, values shown as people read them (*_bytes as sizes).
[[nodiscard]] std::vector<ReportRow> json_rows(const nlohmann::json& object);
[[nodiscard]] std::vector<ReportRow> metric_rows(const RunReport& run);
// The run's notices, then its notes (the scenario's findings).
[[nodiscard]] std::vector<std::string> run_notices(const RunReport& run);

[[nodiscard]] std::string run_title(const RunReport& run);          // "fragmentation on sim"
[[nodiscard]] std::string outcome_label(std::string_view outcome);  // "OOM", "completed", ...
[[nodiscard]] std::string outcome_label(Outcome outcome);
// One line under the title: "OOM at event 1,234 (step 9): fragmentation" or "completed".
[[nodiscard]] std::string run_headline(const RunReport& run);
// How the timeline was drawn, or why there is none.
[[nodiscard]] std::string timeline_caption(const Timeline& timeline);

// A matrix cell in a few short lines: its OOM point, its spread, or why it failed.
[[nodiscard]] std::vector<std::string> cell_lines(const MatrixReportCell& cell);
[[nodiscard]] std::vector<ReportRow> matrix_config_rows(const MatrixReport& matrix);
// The matrix in one line, first in its report: "6 cells: 4 OOM as provoked · 1 completed · 1
// failed (1 crash)". An OOM is what the scenarios provoke, so never counted as a failure.
[[nodiscard]] std::string matrix_counts_line(const MatrixReport& matrix);
// The legend's words for an outcome ("OOM (provoked: expected)").
[[nodiscard]] std::string outcome_legend(std::string_view outcome);

// A relative folder as an href/link target: segments percent-encoded, "/" kept.
[[nodiscard]] std::string url_path(std::string_view relative);

}  // namespace oomlab
