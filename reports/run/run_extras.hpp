// What a run folder holds beside its summary, read for its report: a soak's verdict (soak.json),
// and the scenario's metrics by name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/run/report_input.hpp"
#include "reports/run/run_report.hpp"

namespace oomlab {

// The metric `name` of the run when it is a number.
[[nodiscard]] std::optional<double> run_metric(const RunReport& run, const std::string& name);
// Where to look for a replayed program's own first failure in events.csv; none when the
// program never failed (or the run is no replay).
[[nodiscard]] std::optional<TimelineQuery> program_failure_query(const RunReport& run);

}  // namespace oomlab
