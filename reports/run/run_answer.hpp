// What a run answers, for the top of its report: a search's largest batch, the precision table
// of mixed-precision, where a replayed program itself failed, an error and its last events, a
// soak's verdict. Plain text and rows: the HTML and Markdown writers only lay them out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/run/run_report.hpp"
#include "reports/writers/report_content.hpp"

namespace oomlab {

// The answer in one line, or none when the run's outcome is all there is to say (a plain OOM).
[[nodiscard]] std::optional<std::string> run_answer(const RunReport& run);

// mixed-precision: one row per precision searched.
struct PrecisionRow {
  std::string precision;
  std::uint64_t max_batch = 0;
  std::optional<double> ratio_to_fp32;  // none for fp32 itself, or without an fp32 row
  std::optional<std::uint64_t> analytic_max_batch;
  std::optional<std::uint64_t> bytes_at_max_batch;
};
[[nodiscard]] std::vector<PrecisionRow> precision_rows(const RunReport& run);
// The table's cells as text, header first.
[[nodiscard]] std::vector<std::vector<std::string>> precision_table(const RunReport& run);

// The trial whose events hold the recorded OOM, or nullptr.
[[nodiscard]] const TrialSpan* oom_trial(const RunReport& run);
// "The recorded OOM came from trial fp8 batch 90 (events 51,000..58,075) ...", or "".
[[nodiscard]] std::string oom_trial_line(const RunReport& run);

// A replay whose program itself failed: where, and whether the replay failed there too; "".
[[nodiscard]] std::string program_failure_line(const RunReport& run);

// The error of a run that ended in one, and its last events (seq, op, bytes, status, where).
[[nodiscard]] std::vector<std::vector<std::string>> last_events_table(const RunReport& run);

// soak.json as rows: cycles, OOM point spread, resident memory, device memory, verdict.
[[nodiscard]] std::vector<ReportRow> soak_rows(const ReportSoak& soak);

}  // namespace oomlab
