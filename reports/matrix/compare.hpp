// `oomlab compare`: two results (run summaries or matrices) matched cell by cell, a verdict for
// each on whether and where its OOM point moved, and the writers of those verdicts (a table for
// the terminal, JSON oomlab.compare.v1, Markdown, JUnit XML). Everything here is typed: the CLI
// parses the tolerance and reads the flags; this layer reads the files it is given.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/formats.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab {

// One OOM figure over a cell's repeats (matrix --repeat).
struct Spread {
  double min = 0;
  double median = 0;
  double max = 0;
  // (max - min) / median: how far repeats of the same cell scattered; 0 when the median is 0.
  [[nodiscard]] double relative() const;
};

// One cell of a compared input: a matrix cell, or the one cell a summary.json is.
struct CompareCell {
  // scenario, allocator, options, params, budget, and files (what the params' files held):
  // what cells match by
  nlohmann::json key;
  std::string scenario;   // the rest is for people
  std::string allocator;  // as the matrix was asked ("async:release_threshold=0") or the run's name
  std::string budget;     // as asked ("8GiB"), or the run's budget_bytes in binary units
  std::string outcome;    // oom, completed, error, interrupted, timeout, crash
  std::optional<OomRecord> oom;  // summary.oom (read_oom), set exactly when outcome is oom
  std::optional<Spread> live_bytes_spread;
  std::optional<Spread> step_spread;
  std::optional<Spread> event_spread;
  double duration_ms = 0;
  std::string why;  // for crash/timeout/error: the signal, the error, the child's last line
  // A program cell's frameworks as the exec shim recorded them (summary.program.frameworks).
  std::vector<FrameworkSeen> frameworks;
};

// "torch 2.11.0 (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)", several joined by ", ";
// "" when none was recorded.
[[nodiscard]] std::string frameworks_text(const std::vector<FrameworkSeen>& frameworks);

// A baseline or a current: the file read, its environment, its cells in file order.
struct CompareInput {
  std::string path;
  std::string kind;  // "matrix" or "run"
  nlohmann::json environment;
  nlohmann::json oomlab;  // the producing oomlab's version block, or null
  std::vector<CompareCell> cells;
};

// FILE, or a FOLDER holding matrix.json (else summary.json). Throws Error(input) with a one-line
// message naming the file, and the line and column where the JSON itself is broken.
[[nodiscard]] CompareInput load_compare_input(const std::filesystem::path& path);
// The same from text already read; `name` is what messages call it.
[[nodiscard]] CompareInput parse_compare_input(std::string_view text, const std::string& name);

enum class Verdict : std::uint8_t {
  same,
  earlier_oom,  // regression
  later_oom,
  new_oom,      // regression: baseline completed, current OOMs
  fixed,        // baseline OOM/crash/timeout/error, current completed
  crash,        // regression
  timeout,      // regression
  error,        // regression: the current cell ended in error (or was interrupted)
  new_failure,  // regression: in current only, where it crashed, timed out or ended in error
  missing,      // in baseline, not in current: a warning
  added,        // in current only, where it ran to its OOM or completed
};
inline constexpr std::array kVerdicts = {
    Verdict::same,        Verdict::earlier_oom, Verdict::later_oom, Verdict::new_oom,
    Verdict::fixed,       Verdict::crash,       Verdict::timeout,   Verdict::error,
    Verdict::new_failure, Verdict::missing,     Verdict::added};

[[nodiscard]] std::string_view to_string(Verdict verdict);
[[nodiscard]] bool is_regression(Verdict verdict);

// How far one dimension of the OOM point moved, and the tolerance it was held to.
struct Movement {
  std::uint64_t baseline = 0;
  std::uint64_t current = 0;
  double change = 0;     // (current - baseline) / baseline; +inf when only the baseline is 0
  double tolerance = 0;  // relative: the asked tolerance, widened by measured spreads
  // The slack keeps exactly 2.0% inside a 2% tolerance, whatever the rounding of either.
  [[nodiscard]] bool earlier() const { return change < -tolerance * (1 + 1e-9); }
  [[nodiscard]] bool later() const { return change > tolerance * (1 + 1e-9); }
};

// An allocator option whose value differs between a missing cell and the added cell that is the
// same in everything else: "release_threshold", "0", "max" (as `--allocator` spells values).
struct OptionDifference {
  std::string option;
  std::string baseline;  // "(not set)" where that side's record has no such option
  std::string current;
};

struct CellVerdict {
  std::optional<CompareCell> baseline;  // absent for `added` and `new_failure`
  std::optional<CompareCell> current;   // absent for `missing`
  Verdict verdict = Verdict::same;
  std::string reason;  // one line, for people
  // Set when both sides ran out of memory. The step dimension is the event index instead when
  // both steps are 0 (scenarios without steps).
  std::optional<Movement> live_bytes;
  std::optional<Movement> step;
  bool step_is_event = false;
  // Set on a missing cell and the added one that differ only in allocator options (both rows).
  std::vector<OptionDifference> options_differ;

  [[nodiscard]] const CompareCell& cell() const { return baseline ? *baseline : *current; }
  // The allocator as the table shows it: with this side's differing options when it has any
  // ("sim (page=2MiB)"), so that the two rows of such a pair read apart.
  [[nodiscard]] std::string allocator_label() const;
};

// One row of the environments side by side.
struct EnvironmentRow {
  std::string what;  // "device", "driver", ...
  std::string baseline;
  std::string current;
  bool differs = false;
  bool warns = false;  // a difference users compare on purpose: device, driver, CUDA runtime
};

struct Comparison {
  CompareInput baseline;
  CompareInput current;
  double tolerance = 0.02;  // relative: 0.02 is 2%
  std::vector<CellVerdict> cells;
  std::vector<EnvironmentRow> environment;

  [[nodiscard]] std::size_t count(Verdict verdict) const;
  [[nodiscard]] std::size_t regressions() const;
  [[nodiscard]] bool environments_differ() const;
};

// The key as cells match by it: a parameter whose file's content is recorded (key.files) stands
// for that content, so the same trace under another path (or another checkout) is the same cell.
[[nodiscard]] nlohmann::json matching_key(const nlohmann::json& key);

// Matches cells by JSON-equal keys (a key found twice, as on several devices, matches in order)
// and gives each its verdict. A parameter that names a file matches by the file's content where
// the key records it (key.files: {"trace": "sha256:..."}), not by its path. `tolerance` is
// relative (0.02 for 2%), 0 to 1.
[[nodiscard]] Comparison compare(CompareInput baseline, CompareInput current, double tolerance);

// One cell's verdict against an earlier one of the same key (both present), as compare() judges.
[[nodiscard]] CellVerdict judge_cells(const CompareCell& baseline, const CompareCell& current,
                                      double tolerance);
// The verdict of a cell with nothing earlier to compare it with: `added`, or `new-failure` where
// it crashed, timed out or ended in error.
[[nodiscard]] CellVerdict unmatched_cell(const CompareCell& current);

// Pairs each missing cell with an added one whose key differs only in its allocator's options,
// and names those options on both (compare_options.cpp; compare() calls it).
void pair_option_differences(std::vector<CellVerdict>& cells);
// "page=2MiB in the baseline, page=4MiB in the current", "" when the cell has no such pair.
[[nodiscard]] std::string options_differ_text(const CellVerdict& verdict);

// "driver 570.86.15 → 580.159.04" when both sides ran on the same GPU model under two drivers
// (the night of a driver upgrade), else "".
[[nodiscard]] std::string driver_change(const Comparison& comparison);

// "comparing different environments: device NVIDIA H100 80GB HBM3 vs NVIDIA H200; ..." or "".
[[nodiscard]] std::string environment_warning(const Comparison& comparison);
// "incomplete: 2 of 6 baseline cells missing from the current (leak/cuda, ...)", "incomplete: no
// cell matched", or "" when every baseline cell found its current one.
[[nodiscard]] std::string incomplete_reason(const Comparison& comparison);
// "no baseline cell is in the current: ..." when both have cells and none matched, else "".
[[nodiscard]] std::string no_match_warning(const Comparison& comparison);
// "3 same, 1 earlier-oom, 1 crash"
[[nodiscard]] std::string verdict_counts(const Comparison& comparison);
// "regression: 2 of 6 cells (1 earlier-oom, 1 crash)" or "no regression in 6 cells"
[[nodiscard]] std::string conclusion(const Comparison& comparison);

// The writers (compare_writers.cpp).
[[nodiscard]] std::string compare_table(const Comparison& comparison);
[[nodiscard]] std::string compare_markdown(const Comparison& comparison);
[[nodiscard]] nlohmann::ordered_json compare_json(const Comparison& comparison);
// One testcase per cell: regressions fail, missing cells are skipped.
[[nodiscard]] std::vector<JUnitCase> compare_junit_cases(const Comparison& comparison);

}  // namespace oomlab
