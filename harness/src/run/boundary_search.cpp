#include "run/boundary_search.hpp"

#include <algorithm>

namespace oomlab {

std::string_view to_string(TrialRole role) {
  switch (role) {
    case TrialRole::top:
      return "top";
    case TrialRole::prediction:
      return "prediction";
    case TrialRole::reaim:
      return "re-aim";
    case TrialRole::probe:
      return "probe";
    case TrialRole::step:
      return "step";
    case TrialRole::bisection:
      return "bisection";
    case TrialRole::confirm:
      break;
  }
  return "confirm";
}

namespace {

// The positions still open: above what fails and below what completes.
struct Open {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  [[nodiscard]] bool empty() const { return low > high; }
};

Open open_of(const Bracket& b, Axis axis) {
  const std::uint64_t low = b.bad ? *b.bad + 1 : axis.least;
  if (b.good && *b.good <= low) return {.low = 1, .high = 0};  // nothing open
  return {.low = low, .high = b.good ? *b.good - 1 : axis.most};
}

class Steps {
 public:
  Steps(Bracket known, Axis axis, const CompletesAt& completes, const Guide& guide)
      : b_(known), axis_(axis), completes_(completes), guide_(guide) {}

  // Runs `position`; false when its answer is unknown.
  bool run(std::uint64_t position, StepKind kind, bool& fits) {
    const std::optional<bool> answer = completes_(position, kind);
    if (!answer) return false;
    fits = *answer;
    (fits ? b_.good : b_.bad) = position;
    return true;
  }

  // The probe, then steps doubling away from it while the answer stays the same. False: stopped.
  bool gallop(std::uint64_t probe, std::uint64_t first_step) {
    const Open open = open_of(b_, axis_);
    if (open.empty()) return true;
    probe = std::clamp(probe, open.low, b_.good ? *b_.good : open.high);
    bool fits = true;  // a probe at `good` is known to complete: the steps go down from it
    if (!b_.good || probe < *b_.good) {
      if (!run(probe, StepKind::probe, fits)) return false;
      if (const auto moved = guided()) return gallop(moved->position, step_to(probe, *moved));
    }
    std::uint64_t last = probe;
    for (std::uint64_t step = std::max<std::uint64_t>(first_step, 1);; step *= 2) {
      const Open now = open_of(b_, axis_);
      if (now.empty()) return true;
      std::uint64_t next = 0;
      if (fits) {  // down, toward what fails
        if (last - now.low < step) {
          if (b_.bad) return true;  // the known other side is as near: bisect
          next = now.low;           // nothing known below: the axis's end is the last step
        } else {
          next = last - step;
        }
      } else {  // up, toward what completes
        if (now.high - last < step) {
          if (b_.good) return true;
          next = now.high;
        } else {
          next = last + step;
        }
      }
      bool now_fits = false;
      if (!run(next, StepKind::step, now_fits)) return false;
      if (const auto moved = guided()) return gallop(moved->position, step_to(next, *moved));
      if (now_fits != fits) return true;
      last = next;
    }
  }

  bool bisect() {
    for (Open open = open_of(b_, axis_); !open.empty(); open = open_of(b_, axis_)) {
      const std::uint64_t mid = open.low + (open.high - open.low) / 2;
      bool fits = false;
      if (!run(mid, StepKind::bisection, fits)) return false;
    }
    return true;
  }

  [[nodiscard]] const Bracket& bracket() const { return b_; }

 private:
  // The guide's probe, asked until it gives its answer (then never again).
  std::optional<Aim> guided() {
    if (!guide_ || guided_) return std::nullopt;
    if (open_of(b_, axis_).empty()) return std::nullopt;
    std::optional<Aim> aim = guide_(b_);
    if (aim && !aim->more) guided_ = true;
    return aim;
  }

  // The first step from where the guide sent the search: 1 from its answer, as far as the run
  // before it from a run it wanted (were that run to fail, the bracket is bisected at once).
  static std::uint64_t step_to(std::uint64_t from, const Aim& aim) {
    if (!aim.more) return 1;
    return std::max<std::uint64_t>(from > aim.position ? from - aim.position : aim.position - from,
                                   1);
  }

  Bracket b_;
  Axis axis_;
  const CompletesAt& completes_;
  const Guide& guide_;
  bool guided_ = false;
};

}  // namespace

std::optional<Bracket> search_from(std::uint64_t probe, std::uint64_t first_step, Bracket known,
                                   Axis axis, const CompletesAt& completes, const Guide& guide) {
  Steps steps(known, axis, completes, guide);
  if (!steps.gallop(probe, first_step) || !steps.bisect()) return std::nullopt;
  return steps.bracket();
}

Confirmation confirm_boundary(std::uint64_t answer, std::optional<std::uint64_t> beyond,
                              unsigned runs,
                              const std::function<std::optional<bool>(std::uint64_t)>& completes) {
  Confirmation c{.runs = runs};
  for (unsigned i = 0; i < runs; ++i) {
    const std::optional<bool> at = completes(answer);
    if (!at) return c;
    c.answer_completed += *at ? 1 : 0;
    if (!beyond) continue;
    const std::optional<bool> past = completes(*beyond);
    if (!past) return c;
    c.beyond_completed += *past ? 1 : 0;
  }
  return c;
}

}  // namespace oomlab
