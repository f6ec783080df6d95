// Whose verdicts a run's record holds, and what a re-diagnosis changed of them: the outcome, the
// OOM's place and cause, the advice, the user's line, and the model's reproduction, bound and
// answer per setting. Lines of plain text for the top of a report (RunReport::provenance).
#pragma once

#include <string>
#include <vector>

#include "reports/run/run_report.hpp"

namespace oomlab {

// This oomlab as a record names it: "0.1.0 (git 22f2e5729924)", "-dirty" when its tree was.
[[nodiscard]] std::string this_oomlab();
// The oomlab that wrote a record, in the same words ("an unknown oomlab" without its block).
[[nodiscard]] std::string written_by(const ReportEnvironment& env);
// Another oomlab wrote it: another version or commit, or none named.
[[nodiscard]] bool written_by_another(const ReportEnvironment& env);

// The line a report of such a record leads with: its verdicts are that oomlab's, and how to have
// this one's (`oomlab report --remodel DIR`). Empty when this oomlab wrote it.
[[nodiscard]] std::string other_version_line(const RunReport& run);

// What differs between the stored verdict and today's, one line each ("cause: capacity ->
// fragmentation"); empty when nothing a reader acts on changed.
[[nodiscard]] std::vector<std::string> verdict_changes(const RunResult& stored,
                                                       const RunResult& now);

}  // namespace oomlab
