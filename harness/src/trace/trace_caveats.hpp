// What an answer read from a trace cannot know, said wherever one is read from it: a history
// that began while blocks were already live (recorded late, or its first entries cut by
// PyTorch's max_entries), and a trace that stops at the program's own OOM.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace oomlab::trace {

// One line each, in words a user acts on; none for a trace that has neither.
[[nodiscard]] std::vector<std::string> trace_caveats(const Trace& trace);

}  // namespace oomlab::trace
