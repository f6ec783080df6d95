// What a run folder holds beyond the OOM record, read for its report: a search's trials, the
// last events before an error, a soak's verdict (soak.json), and the scenario's metrics by name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/report_input.hpp"
#include "reports/run_report.hpp"

namespace oomlab {

[[nodiscard]] std::vector<ReportTrial> read_trials(const JsonFields& summary);
[[nodiscard]] std::vector<ReportEvent> read_last_events(const JsonFields& summary);

// The metric `name` of the run when it is a number.
[[nodiscard]] std::optional<double> run_metric(const RunReport& run, const std::string& name);
// Where to look for a replayed program's own first failure in events.csv; none when the
// program never failed (or the run is no replay).
[[nodiscard]] std::optional<TimelineQuery> program_failure_query(const RunReport& run);

}  // namespace oomlab
