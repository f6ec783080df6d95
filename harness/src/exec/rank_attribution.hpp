// Which rank of a distributed job ran out of memory first, from all `exec` saw: the rank mark on
// its OOM line, the device PyTorch's message names, torchrun's root cause and its error file, and
// which device's memory reached its budget — with what the other ranks were doing.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "exec/exec_watch.hpp"
#include "exec/memory_timeline.hpp"
#include "run/run_result.hpp"

namespace oomlab {

struct RankEvidence {
  const ExecWatch& watch;
  std::vector<int> device_indices;      // oomlab's, in the program's own order
  std::vector<DeviceTimeline> devices;  // the same order
  bool failed = false;                  // the program did not complete
};

// Fills p.ranks and p.failing_rank for a distributed job (several ranks or devices) that ran out
// of memory or failed; leaves them empty otherwise. Rank r is taken to run on the program's
// device r (torchrun's LOCAL_RANK as cuda:r) unless its OOM line names its device.
void attribute_ranks(const RankEvidence& evidence, ProgramRun& p);

// The device a run on several speaks of first (its position in p.device_runs): the failing
// rank's, else the one that came closest to its budget (the least of it left at its peak); none
// on one device.
[[nodiscard]] std::optional<std::size_t> failing_device(const ProgramRun& p);

}  // namespace oomlab
