#include "run/frontier_steps.hpp"

#include <algorithm>

namespace oomlab {

std::optional<UnitBracket> search_from(std::uint64_t probe, UnitBracket b,
                                       const CompletesAt& completes) {
  if (b.good <= b.bad + 1) return b;
  probe = std::clamp(probe, b.bad + 1, b.good);
  bool down = true;  // a probe at `good` is known to complete: the steps go down from it
  if (probe < b.good) {
    const std::optional<bool> fits = completes(probe, StepKind::probe);
    if (!fits) return std::nullopt;
    (*fits ? b.good : b.bad) = probe;
    down = *fits;
  }
  // Outward from the last answer alike, each step twice the one before, until one differs.
  for (std::uint64_t step = 1; b.good - b.bad > 1; step *= 2) {
    if (step >= b.good - b.bad) break;  // the known other side is as near: bisect
    const std::uint64_t next = down ? b.good - step : b.bad + step;
    const std::optional<bool> fits = completes(next, StepKind::step);
    if (!fits) return std::nullopt;
    (*fits ? b.good : b.bad) = next;
    if (*fits != down) break;
  }
  while (b.good - b.bad > 1) {
    const std::uint64_t mid = b.bad + (b.good - b.bad) / 2;
    const std::optional<bool> fits = completes(mid, StepKind::bisection);
    if (!fits) return std::nullopt;
    (*fits ? b.good : b.bad) = mid;
  }
  return b;
}

}  // namespace oomlab
