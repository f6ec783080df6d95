// What the replay benchmarks share (replay_bench.cpp, replay_split.cpp): a synthetic RMM log, the
// configuration of an oomlab replay of it, and the bare loop a replay is held to.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "run/runner.hpp"
#include "trace/trace.hpp"

namespace oomlab::bench {

// The replay benchmarks' trace length.
inline constexpr std::size_t kReplayEvents = 2'000'000;

// An RMM log of `events` rows in the temporary folder, written at the first call (the same file
// after): up to 2,048 blocks live, sizes log-uniform from 256 B to 1 MiB.
[[nodiscard]] const std::filesystem::path& synthetic_rmm_log(std::size_t events);

// A replay of the kReplayEvents-row synthetic log on `allocator` (its default options), verify
// off.
[[nodiscard]] RunConfig replay_config(const char* allocator, BudgetRequest budget);

#if defined(OOMLAB_WITH_CUDA)
struct BareLoopOptions {
  bool with_ballast = false;  // hold all but 8 GiB of the free memory first, as oomlab's would
  bool timed = false;         // read the time inside each pool call around it
  // With `timed`: after each call, write 64 fresh bytes (an event's in the recorder's log) into
  // this buffer of one line an event, touched beforehand as the log's chunks are.
  std::vector<std::array<std::uint64_t, 8>>* traffic = nullptr;
};

struct BareLoopTime {
  double seconds = 0;          // the loop alone
  double in_call_seconds = 0;  // with `timed`: the part inside the pool calls
};

// The trace's allocations and frees straight to a new pool on a new stream, read as a replay
// reads them (the floor a replay on `async` is held to); everything is given back after.
[[nodiscard]] BareLoopTime bare_replay_loop(const trace::Trace& t, const BareLoopOptions& options);
#endif

}  // namespace oomlab::bench
