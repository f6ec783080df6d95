#include "run/searches.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// Records each run in the result, prints it, and turns how it ended into the rule's answer.
class Recorder {
 public:
  Recorder(BoundaryResult& result, const TrialAt& run_at,
           const std::function<void(const Trial&)>& on_trial, bool errors_stop)
      : r_(result), run_at_(run_at), on_trial_(on_trial), errors_stop_(errors_stop) {}

  std::optional<bool> run(std::optional<std::uint64_t> value, TrialRole role, bool verifies) {
    Trial trial = run_at_(value);
    if (trial.outcome == Outcome::interrupted) throw Interrupted();
    trial.role = role;
    trial.verifies_prediction = verifies;
    r_.trials.push_back(std::move(trial));
    if (on_trial_) on_trial_(r_.trials.back());
    return verdict(r_.trials.back());
  }

 private:
  std::optional<bool> verdict(const Trial& t) {
    switch (t.outcome) {
      case Outcome::completed:
        return true;
      case Outcome::oom:
        return false;
      case Outcome::timeout:
        r_.timed_out = true;
        return std::nullopt;
      case Outcome::error:
      case Outcome::interrupted:
        break;
    }
    if (!errors_stop_) return false;
    r_.stopped = t.message.empty() ? "the run ended in error" : t.message;
    return std::nullopt;
  }

  BoundaryResult& r_;
  const TrialAt& run_at_;
  const std::function<void(const Trial&)>& on_trial_;
  bool errors_stop_;
};

// The role of the rule's next run: the prediction and the step beyond it verify it.
class Roles {
 public:
  void expect_prediction() {
    prediction_next_ = true;
    verify_steps_ = 1;
  }
  void expect_step() { step_next_ = true; }  // the next probe is a step the model asked for
  void expect_reaim() {
    reaim_next_ = true;
    verify_steps_ = 0;  // the prediction failed: nothing after it verifies it
  }
  std::pair<TrialRole, bool> next(StepKind kind) {
    if (kind == StepKind::probe) {
      const bool predicted = prediction_next_;
      const bool reaimed = reaim_next_;
      const bool stepped = step_next_;
      prediction_next_ = reaim_next_ = step_next_ = false;
      if (reaimed) return {TrialRole::reaim, false};
      if (stepped) return {TrialRole::step, false};
      return {predicted ? TrialRole::prediction : TrialRole::probe, predicted};
    }
    prediction_next_ = reaim_next_ = step_next_ = false;  // a probe already known is not run again
    const bool verifies = kind == StepKind::step && verify_steps_ > 0;
    verify_steps_ = 0;
    return {kind == StepKind::step ? TrialRole::step : TrialRole::bisection, verifies};
  }

 private:
  bool prediction_next_ = false;
  bool reaim_next_ = false;
  bool step_next_ = false;
  int verify_steps_ = 0;
};

// --confirm, and what it shows: a value beyond the answer that completes after it failed.
void confirm(BoundaryResult& r, Recorder& recorder, unsigned runs, std::uint64_t answer,
             std::optional<std::uint64_t> beyond) {
  const auto searched = static_cast<std::ptrdiff_t>(r.trials.size());
  r.confirmation = confirm_boundary(answer, beyond, runs, [&](std::uint64_t value) {
    return recorder.run(value, TrialRole::confirm, false);
  });
  note_not_monotonic(r, static_cast<std::size_t>(searched), beyond);
}

}  // namespace

void note_not_monotonic(BoundaryResult& r, std::size_t searched,
                        std::optional<std::uint64_t> beyond) {
  if (!beyond) return;
  const auto end = r.trials.begin() + static_cast<std::ptrdiff_t>(searched);
  const auto failed = std::find_if(r.trials.begin(), end, [&](auto& t) {
    return t.value == *beyond && t.outcome != Outcome::completed;
  });
  const auto completed = std::find_if(end, r.trials.end(), [&](auto& t) {
    return t.value == *beyond && t.outcome == Outcome::completed;
  });
  if (failed != end && completed != r.trials.end())
    r.not_monotonic = std::make_pair(*failed, *completed);
}

std::optional<std::uint64_t> shortfall_bytes(const Trial& failed) {
  if (!failed.request_bytes || !failed.free_bytes) return std::nullopt;
  const std::uint64_t wanted = *failed.request_bytes + kDevicePageBytes;
  if (wanted <= *failed.free_bytes) return std::nullopt;  // it says it had room: no aim to take
  return wanted - *failed.free_bytes;
}

BoundaryResult search_budgets(const BudgetSearch& s, const TrialAt& run_at) {
  BoundaryResult r;
  Recorder recorder(r, run_at, s.on_trial, s.errors_stop);
  const std::optional<bool> top_completes = recorder.run(std::nullopt, TrialRole::top, false);
  const Trial top = r.trials.front();
  const std::uint64_t upper = top.budget_bytes;
  if (!top_completes || !*top_completes) {
    r.beyond = upper;
    return r;
  }
  if (s.predict) {
    Prediction p = s.predict(top);
    r.predicted = p.value;
    r.prediction_note = std::move(p.note);
  }
  // Units of the resolution: under one device page is never tried.
  const std::uint64_t res = s.resolution_bytes;
  const Bracket known{.bad = ceil_div(kDevicePageBytes, res) - 1, .good = ceil_div(upper, res)};
  const std::uint64_t probe =
      ceil_div(r.predicted ? *r.predicted : top.used_bytes + s.probe_margin_bytes, res);
  Roles roles;
  if (r.predicted) roles.expect_prediction();
  const CompletesAt completes = [&](std::uint64_t units, StepKind kind) {
    const auto [role, verifies] = roles.next(kind);
    return recorder.run(std::min(units * res, upper), role, verifies);
  };
  // Once: a prediction that ran out of memory, moved up by what its OOM line says it lacked.
  const Guide reaim = [&](const Bracket&) -> std::optional<Aim> {
    const Trial& last = r.trials.back();
    if (last.role != TrialRole::prediction || last.outcome != Outcome::oom) return std::nullopt;
    const std::optional<std::uint64_t> lacked = shortfall_bytes(last);
    if (!lacked || static_cast<long double>(*lacked) >
                       kReaimTrust * static_cast<long double>(last.budget_bytes))
      return std::nullopt;
    roles.expect_reaim();
    return Aim{.position = ceil_div(last.budget_bytes + *lacked, res)};
  };
  const auto bracket =
      search_from(probe, 1, known, {.least = 0, .most = *known.good}, completes, reaim);
  if (!bracket) return r;  // a trial's answer is unknown: so is the frontier
  r.answer = std::min(*bracket->good * res, upper);
  r.beyond = *bracket->bad * res;
  const std::optional<std::uint64_t> below =
      *r.beyond >= kDevicePageBytes ? r.beyond : std::nullopt;
  confirm(r, recorder, s.confirm, *r.answer, below);
  return r;
}

BoundaryResult search_values(const ValueSearch& s, const TrialAt& run_at) {
  BoundaryResult r;
  Recorder recorder(r, run_at, s.on_trial, true);
  // Positions count down from `hi`: completing is then monotone increasing in them.
  const std::uint64_t lo = std::min(s.lo, s.hi);
  const std::uint64_t hi = s.hi;
  Roles roles;
  const CompletesAt completes = [&](std::uint64_t position, StepKind kind) {
    const auto [role, verifies] = roles.next(kind);
    return recorder.run(hi - position, role, verifies);
  };
  std::optional<std::uint64_t> led;  // the model's own run (Prediction::next), asked for once
  const Guide guide = [&](const Bracket&) -> std::optional<Aim> {
    if (led && r.trials.back().value == *led && r.trials.back().outcome != Outcome::completed)
      r.prediction_note = fmt::format(
          "no prediction: the run the model asked for, at {}, did not "
          "complete",
          *led);
    if (!s.predict || r.trials.back().outcome != Outcome::completed) return std::nullopt;
    Prediction p = s.predict(r.trials);
    r.prediction_note = std::move(p.note);
    if (p.value) {
      r.predicted = p.value;
      roles.expect_prediction();
      return Aim{.position = hi - std::clamp(*p.value, lo, hi)};
    }
    if (!p.next || led) return std::nullopt;
    led = std::clamp(*p.next, lo, hi);
    roles.expect_step();
    return Aim{.position = hi - *led, .more = true};
  };
  // From lo, steps of lo (at least 1) that double: lo, 2·lo, 4·lo ...
  const auto bracket = search_from(hi - lo, std::max<std::uint64_t>(lo, 1), {},
                                   {.least = 0, .most = hi - lo}, completes, guide);
  if (!bracket) return r;
  if (bracket->good) r.answer = hi - *bracket->good;
  if (bracket->bad) r.beyond = hi - *bracket->bad;
  if (r.answer) confirm(r, recorder, s.confirm, *r.answer, r.beyond);
  return r;
}

}  // namespace oomlab
