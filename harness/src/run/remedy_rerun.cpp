#include "run/remedy_rerun.hpp"

#include <fmt/format.h>

#include "run/run_result.hpp"

namespace oomlab {

void take_rerun(const RunResult& again, RemedyCheck& check) {
  check.outcome = again.outcome;
  check.held = again.outcome == Outcome::completed;
  check.duration_ms = again.duration_ms;
  if (again.oom && again.oom->program) {
    check.line = again.oom->program->line;
  } else if (!again.error_message.empty()) {
    check.line = again.error_message;
  }
}

std::string remedy_verdict(const RemedyCheck& c) {
  std::string verdict;
  if (c.held) {
    verdict = "the model's claim held";
  } else if (c.outcome == Outcome::oom) {
    verdict = "the model's claim did not hold";
  } else {
    verdict = fmt::format("not known whether the model's claim holds: the rerun ended in {}",
                          to_string(c.outcome));
  }
  return fmt::format("{} ({:.1f} s): {}{}", to_string(c.outcome), c.duration_ms / 1e3, verdict,
                     c.line.empty() ? "" : " (\"" + c.line + "\")");
}

}  // namespace oomlab
