// A remedy's rerun (`exec --check-remedy`), as every framework takes it: how the rerun ended into
// the RemedyCheck, and the verdict on the model's claim in words. Each framework says what it set
// for the rerun in its own words around these (frameworks/*/exec).
#pragma once

#include <string>

#include "run/framework_model.hpp"

namespace oomlab {

struct RunResult;

// How the rerun ended, into `check`: its outcome and time, the claim held when it completed, and
// its OOM line, or why it failed otherwise.
void take_rerun(const RunResult& again, RemedyCheck& check);

// "<outcome> (<s> s): the model's claim held|did not hold|not known ... (\"<line>\")": the part
// of the check's summary after what was set.
[[nodiscard]] std::string remedy_verdict(const RemedyCheck& check);

}  // namespace oomlab
