// `frontier exec`'s JSON (oomlab.frontier.v1, scenario exec): the answer, the prediction and
// every run with why it ran. Field names are fixed; fields may be added, never renamed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/exec_frontier.hpp"

namespace oomlab {

[[nodiscard]] nlohmann::ordered_json frontier_exec_json(const std::vector<std::string>& command,
                                                        std::uint64_t resolution,
                                                        const ExecFrontier& result);

}  // namespace oomlab
