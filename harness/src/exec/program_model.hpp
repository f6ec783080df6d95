// The answers an exec'd PyTorch program's snapshot gives through the model of PyTorch's caching
// allocator: the memory the process held outside the allocator, whether the model fails where
// the program did at the run's budget, each setting at that budget with the smallest card for the
// whole process under it, and the setting to use. A frontier search predicts its answer from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "run/run_result.hpp"

namespace oomlab {

struct ModelOptions {
  const std::atomic<bool>* stop = nullptr;
  unsigned threads = 0;  // 0: one per core
};

// What one snapshot says, given the run it came from (its budget, its program's figures).
// `processes`: how many snapshots the run left (NVML's figure is for all of them together);
// `peak_reserved_of_all`: their allocators' peaks, summed. Throws Error(input) for a file that is
// not a PyTorch snapshot, and Interrupted on a stop.
[[nodiscard]] ProgramModel model_snapshot(const RunResult& run,
                                          const std::filesystem::path& snapshot, bool holds_the_oom,
                                          std::size_t processes, std::uint64_t peak_reserved_of_all,
                                          const ModelOptions& options);

// Every snapshot of run.program into run.models, the one that matters most first: the process
// whose OOM the program printed (its request is the message's), else the first whose trace holds
// an OOM. A snapshot that cannot be read, or a stop, becomes a note of the run; an OOM's advice
// becomes the model's when its snapshot holds the OOM.
void model_program(RunResult& run, const ModelOptions& options);

// The row the program ran with (its snapshot's settings), or none.
[[nodiscard]] const ModelRow* as_ran_row(const ProgramModel& model);

// The smallest card for the whole process with the settings it ran with: the model's frontier
// plus the memory outside the allocator, the largest over the run's snapshots (each process has
// the budget on its device). None when no snapshot gives one.
[[nodiscard]] std::optional<std::uint64_t> predicted_frontier(
    const std::vector<ProgramModel>& models);

}  // namespace oomlab
