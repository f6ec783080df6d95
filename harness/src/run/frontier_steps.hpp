// The step rule of a frontier search, in whole units of its resolution: a first probe (a
// prediction, or what the top run took), then steps that double away from it (1, 2, 4 ... units:
// down from a probe that completes, up from one that fails) until the answer changes, then
// bisection between the last two. A frontier D units from the probe costs about 2·log2(D) runs
// past the probe, never a bisection from zero; a right prediction costs two (it, and one under).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace oomlab {

// What the search knows: `good` completes, `bad` does not (or lies under what may be tried).
struct UnitBracket {
  std::uint64_t bad = 0;
  std::uint64_t good = 1;
};

// Which of the rule's runs a trial is: the first probe, a step outward, or a bisection.
enum class StepKind : std::uint8_t { probe, step, bisection };

// Whether the run completes at `units`; none when its answer is unknown (a trial timed out): the
// search stops there.
using CompletesAt = std::function<std::optional<bool>(std::uint64_t units, StepKind kind)>;

// From `known` (bad < good) and the probe (clamped into (bad, good]; at `good` it is not run
// again), the bracket with good == bad + 1, or none when a trial's answer was unknown.
[[nodiscard]] std::optional<UnitBracket> search_from(std::uint64_t probe, UnitBracket known,
                                                     const CompletesAt& completes);

}  // namespace oomlab
