// A replay's failing request as the OOM record shows it (ProgramRequest): its place in the
// trace, the program's frames there and the user's own line among them, the largest blocks live
// then and what filled memory, each without the recording's own frames.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oomlab/program_replay.hpp"
#include "oomlab/trace.hpp"

namespace oomlab {

// A block the replay held at the failure: its size and the event that allocated it.
struct LiveBlock {
  std::uint64_t bytes = 0;
  std::uint32_t event = 0;
};

// The request at `failing_at` (a position in trace.events), with `live` the blocks held then and
// `roots` the program's own folders (trace::entry_folders).
[[nodiscard]] ProgramRequest failing_request(const trace::Trace& trace, std::uint32_t failing_at,
                                             std::vector<LiveBlock> live,
                                             std::span<const std::string> roots);

}  // namespace oomlab
