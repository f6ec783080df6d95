// What a replay says of a trace's entries that do not pair up: a free of an address that is not
// allocated (never, or freed already) and an allocation at an address still allocated. A replay
// skips the one and keeps the earlier block of the other, noting each; under --strict either is
// an error that names the first, by its file's line where the format has lines.
#pragma once

#include <string>
#include <vector>

#include "oomlab/trace.hpp"

namespace oomlab {

// Error(input) "FILE:LINE: entry N ..." (a binary format's "FILE: entry N ...") for the first
// such entry; nothing where there is none.
void check_strict(const trace::Trace& trace);
// One note for each kind the trace holds, naming the first of it.
[[nodiscard]] std::vector<std::string> unpaired_entry_notes(const trace::Trace& trace);

}  // namespace oomlab
