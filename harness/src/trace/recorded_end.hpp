// The run record beside a snapshot: how its program ended, as the `oomlab exec` run that wrote
// it recorded (oomlab/trace.hpp's RecordedEnd), and that in words for an answer's caveats.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "oomlab/trace.hpp"

namespace oomlab::trace {

// summary.json in the snapshot's folder, when it is an exec run's record that lists the file.
[[nodiscard]] std::optional<RecordedEnd> recorded_end_beside(const std::filesystem::path& snapshot);

// "the run record beside the snapshot (DIR/summary.json) says the program ran out of memory in
// cuBLAS ...: ... a lower bound for the whole job".
[[nodiscard]] std::string recorded_end_caveat(const RecordedEnd& end);

}  // namespace oomlab::trace
