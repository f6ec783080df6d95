// The answers an exec'd PyTorch program's snapshot gives through the model of PyTorch's caching
// allocator: the memory the process held outside the allocator, whether the model fails where
// the program did at the run's budget, each setting at that budget with the smallest card for the
// whole process under it, and the setting to use. A frontier search predicts its answer from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "run/run_result.hpp"

namespace oomlab::torch {

struct ModelOptions {
  const std::atomic<bool>* stop = nullptr;
  unsigned threads = 0;  // 0: one per core
};

// Where a snapshot's process ran: its device and what the run saw there.
struct SnapshotPlace {
  std::uint32_t device = 0;        // the program's numbering: the device its history is of
  std::uint64_t budget_bytes = 0;  // that device's budget
  std::uint64_t peak_bytes = 0;    // the program's processes on that device at the most (NVML)
  std::size_t processes = 1;       // snapshots of that device (NVML's figure is for all of them)
  std::uint64_t peak_reserved_of_all = 0;  // their allocators' peaks, summed
};

// What one snapshot says, given the run it came from (its program's figures) and its place:
// `trace` is the snapshot at `snapshot`, read already (its device's trace). Throws Error(input)
// for a trace that is not a PyTorch snapshot's, and Interrupted on a stop.
[[nodiscard]] ProgramModel model_snapshot(const RunResult& run,
                                          const std::filesystem::path& snapshot,
                                          const std::shared_ptr<const trace::Trace>& trace,
                                          bool holds_the_oom, const SnapshotPlace& place,
                                          const ModelOptions& options);

// Every snapshot of run.program into run.models, each replayed on its own device's budget with
// the memory outside its allocator measured on that device, the one that matters most first: the
// process whose OOM the program printed (its request is the message's), else the first whose trace
// holds an OOM. A snapshot that cannot be read, or a stop, becomes a note of the run; an OOM's
// advice becomes the model's when its snapshot holds the OOM.
void model_program(RunResult& run, const ModelOptions& options);

}  // namespace oomlab::torch
