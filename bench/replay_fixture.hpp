// What the replay benchmarks share (replay_bench.cpp, replay_split.cpp): a synthetic RMM log and
// the configuration of an oomlab replay of it.
#pragma once

#include <cstddef>
#include <filesystem>

#include "run/runner.hpp"

namespace oomlab::bench {

// The replay benchmarks' trace length.
inline constexpr std::size_t kReplayEvents = 2'000'000;

// An RMM log of `events` rows in the temporary folder, written at the first call (the same file
// after): up to 2,048 blocks live, sizes log-uniform from 256 B to 1 MiB.
[[nodiscard]] const std::filesystem::path& synthetic_rmm_log(std::size_t events);

// A replay of the kReplayEvents-row synthetic log on `allocator` (its default options), verify
// off.
[[nodiscard]] RunConfig replay_config(const char* allocator, BudgetRequest budget);

}  // namespace oomlab::bench
