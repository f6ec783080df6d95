// `oomlab report` of a frontier folder (frontier.json, schema oomlab.frontier.v1, from `frontier`
// or `frontier exec`): the answer first, then the trials, then the facts of the search; the
// content made once here and laid out as HTML and Markdown (frontier_pages.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/writers/report_content.hpp"

namespace oomlab {

struct FrontierReportTrial {
  std::uint64_t budget_bytes = 0;
  std::string outcome;
  std::string cause;  // "" when none
  double duration_ms = 0;
  std::optional<std::uint64_t> peak_bytes;  // frontier exec: the program's peak
  std::string oom_line;                     // frontier exec: the program's own OOM line
  bool confirming = false;                  // frontier exec: a confirming run
};

struct FrontierReport {
  std::filesystem::path dir;  // where report.html and report.md go by default
  std::string answer;         // the line the command printed ("" in a file from before it)
  std::string scenario;       // "exec" for a program
  nlohmann::json scenario_params = nlohmann::json::object();
  std::string allocator;
  nlohmann::json allocator_options = nlohmann::json::object();
  bool simulated = false;
  std::uint64_t upper_bytes = 0;
  std::optional<std::uint64_t> frontier_bytes;
  std::uint64_t failing_bytes = 0;
  bool timed_out = false;
  std::uint64_t resolution_bytes = 0;
  std::vector<FrontierReportTrial> trials;
  std::vector<ReportRow> program;  // frontier exec: the program's figures and the confirm runs
  std::string oomlab_version;
};

// `path`: frontier.json or the folder holding it. Error(input) naming the file and the field.
[[nodiscard]] FrontierReport load_frontier_report(const std::filesystem::path& path);

// "frontier · replay on torch (simulated)"
[[nodiscard]] std::string frontier_title(const FrontierReport& report);
// The answer: the command's own line, or (a file from before it was kept) the frontier's figures.
[[nodiscard]] std::string frontier_answer(const FrontierReport& report);
// The trials in the order they ran, a header first.
[[nodiscard]] std::vector<std::vector<std::string>> frontier_trials_table(
    const FrontierReport& report);
// What was searched, how, and the figures of the answer.
[[nodiscard]] std::vector<ReportRow> frontier_rows(const FrontierReport& report);

[[nodiscard]] std::string frontier_html(const FrontierReport& report);
[[nodiscard]] std::string frontier_markdown(const FrontierReport& report);

}  // namespace oomlab
