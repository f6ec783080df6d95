// `oomlab report` of a fit folder (fit.json, schema oomlab.fit.v1, from `fit`, `fit exec` or
// `fit replay --from`): the answer first, then the trials, then the facts of the search; the
// content made once here and laid out as HTML and Markdown (fit_pages.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/writers/report_content.hpp"

namespace oomlab {

struct FitReportTrial {
  std::uint64_t value = 0;
  std::string outcome;
  std::string cause;                           // "" when none
  std::optional<std::uint64_t> peak_bytes;     // the program's peak, or a scenario's reserved
  std::optional<std::uint64_t> request_bytes;  // what an OOM asked for
  double seconds = 0;
  std::string role;     // why it ran: "probe", "step", "bisection", "confirm", ...
  std::string message;  // a program's own last words, or a run's error; "" when none
};

struct FitReport {
  std::filesystem::path dir;  // where report.html and report.md go by default
  std::string answer;         // the lines the command printed ("" in a file without them)
  std::string scenario;       // "exec" for a program
  nlohmann::json scenario_params = nlohmann::json::object();
  std::string allocator;
  nlohmann::json allocator_options = nlohmann::json::object();
  bool simulated = false;
  std::string name;  // the parameter searched: --range NAME=LO..HI
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t budget_bytes = 0;
  std::optional<std::uint64_t> value;       // the largest value that completes
  std::optional<std::uint64_t> next_value;  // the value above it, which did not
  std::optional<std::uint64_t> peak_bytes;  // at the answer
  std::optional<std::uint64_t> headroom_bytes;
  bool timed_out = false;
  std::string stopped;  // why the search stopped before an answer; "" when it did not
  std::vector<std::string> cards;
  std::vector<FitReportTrial> trials;
  std::vector<ReportRow> extras;  // the prediction, what it was made from, the confirming runs
  std::string oomlab_version;
};

// `path`: fit.json or the folder holding it. Error(input) naming the file and the field.
[[nodiscard]] FitReport load_fit_report(const std::filesystem::path& path);

// "fit · leak on sim (simulated)", "fit · a program"
[[nodiscard]] std::string fit_title(const FitReport& report);
// The answer, one line each: the command's own, or (a file without them) the search's figures.
[[nodiscard]] std::vector<std::string> fit_answer(const FitReport& report);
// The trials in the order they ran, a header first.
[[nodiscard]] std::vector<std::vector<std::string>> fit_trials_table(const FitReport& report);
// What was searched, how, and the figures of the answer.
[[nodiscard]] std::vector<ReportRow> fit_rows(const FitReport& report);

[[nodiscard]] std::string fit_html(const FitReport& report);
[[nodiscard]] std::string fit_markdown(const FitReport& report);

}  // namespace oomlab
