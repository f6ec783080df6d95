#include "run/value_rounds.hpp"

#include <algorithm>
#include <set>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {

// The doubling from `from` as search_values makes it (lo, 2·lo, 4·lo ... with steps of lo, at
// least 1), capped at `hi`: the values past `after`, at most `count`.
std::vector<std::uint64_t> doublings(std::uint64_t lo, std::uint64_t hi, std::uint64_t after,
                                     std::size_t count) {
  std::vector<std::uint64_t> out;
  std::uint64_t step = std::max<std::uint64_t>(lo, 1);
  for (std::uint64_t v = lo; out.size() < count; step *= 2) {
    if (v > after) out.push_back(v);
    if (v >= hi) break;
    v = hi - v > step ? v + step : hi;
  }
  return out;
}

// The inside of (below, above) cut into `parts` equal parts: the cuts, in increasing value.
std::vector<std::uint64_t> cuts(std::uint64_t below, std::uint64_t above, unsigned parts) {
  std::vector<std::uint64_t> out;
  const std::uint64_t span = above - below;
  for (unsigned k = 1; k < parts; ++k) {
    // span / parts · k, rounded, without span · k overflowing
    const std::uint64_t v = below + span / parts * k + ((span % parts) * k + parts / 2) / parts;
    if (v > below && v < above) out.push_back(v);
  }
  return out;
}

// The prediction and the value over it verify it; with four GPUs or more, the value under it
// (the answer where the prediction is one too high) and one more (one too low) come too. Once it
// failed, the values under it a step further each time (p-1, p-2, p-4 ...); once it held, those
// over it (p+1, p+2, p+4 ...): the answer is near it. Only those still open count.
std::vector<std::uint64_t> near_prediction(const RoundState& s, unsigned width,
                                           std::uint64_t open_lo, std::uint64_t open_hi) {
  const std::uint64_t p = std::clamp(*s.predicted, s.lo, s.hi);
  std::vector<std::uint64_t> out;
  if (s.bad && *s.bad <= p) {
    for (std::uint64_t d = 1; d > 0 && d < p && out.size() < width; d *= 2) {
      if (p - d >= open_lo && p - d <= open_hi) out.push_back(p - d);
    }
  } else if (s.good && *s.good >= p) {
    for (std::uint64_t d = 1; d > 0 && d <= open_hi - p && out.size() < width; d *= 2) {
      if (p + d >= open_lo) out.push_back(p + d);
    }
  } else {
    out = {p};
    if (p < s.hi) out.push_back(p + 1);
    if (width >= 4) {
      if (p > 0) out.push_back(p - 1);
      if (p + 1 < s.hi) out.push_back(p + 2);
    }
  }
  return out;
}

}  // namespace

std::vector<std::uint64_t> next_round(const RoundState& s, unsigned width) {
  const std::uint64_t open_lo = s.good ? *s.good + 1 : s.lo;
  const std::uint64_t open_hi = s.bad ? (*s.bad == 0 ? 0 : *s.bad - 1) : s.hi;
  if (width == 0 || (s.bad && *s.bad <= open_lo) || open_lo > open_hi) return {};
  std::vector<std::uint64_t> wanted;
  if (s.predicted) wanted = near_prediction(s, width, open_lo, open_hi);
  if (!s.bad) {
    for (const std::uint64_t v : doublings(s.lo, s.hi, s.tried_most, width))
      wanted.push_back(v);
  }
  const std::uint64_t below = s.good ? *s.good : open_lo - 1;
  const std::uint64_t above = s.bad ? *s.bad : open_hi + 1;
  for (const std::uint64_t v : cuts(below, above, width + 1))
    wanted.push_back(v);
  std::set<std::uint64_t> round;
  for (const std::uint64_t v : wanted) {
    if (round.size() == width) break;
    if (v >= open_lo && v <= open_hi) round.insert(v);
  }
  // A bracket's inside no wider than the round: every value in it.
  if (open_hi - open_lo < width) {
    for (std::uint64_t v = open_lo; round.size() < width && v <= open_hi; ++v)
      round.insert(v);
  }
  return {round.begin(), round.end()};
}

namespace {

class Rounds {
 public:
  Rounds(const ValueSearch& s, unsigned width, const RoundAt& run_round, BoundaryResult& r)
      : s_(s), width_(width), run_round_(run_round), r_(r) {
    state_.lo = std::min(s.lo, s.hi);
    state_.hi = s.hi;
  }

  // Runs rounds until the boundary is found (true) or a trial's answer is unknown (false).
  bool search() {
    for (std::vector<std::uint64_t> values = next_round(state_, width_); !values.empty();
         values = next_round(state_, width_)) {
      if (!run(values)) return false;
      predict();
    }
    return true;
  }

  // One round: each trial recorded, in increasing value; false when one's answer is unknown.
  bool run(const std::vector<std::uint64_t>& values, TrialRole fixed = TrialRole::top) {
    if (s_.on_round) s_.on_round(values, r_.trials.size());
    std::vector<Trial> trials = run_round_(values);
    if (trials.size() != values.size())
      throw Error(ErrorKind::internal, "a round's runs do not match its values");
    bool known = true;
    for (std::size_t i = 0; i < trials.size(); ++i) {
      Trial& t = trials[i];
      if (t.outcome == Outcome::interrupted) throw Interrupted();
      t.value = values[i];
      role(t, fixed);
      known = absorb(t) && known;
      r_.trials.push_back(std::move(t));
      if (s_.on_trial) s_.on_trial(r_.trials.back());
    }
    return known;
  }

  [[nodiscard]] const RoundState& state() const { return state_; }

 private:
  void role(Trial& t, TrialRole fixed) {
    const std::optional<std::uint64_t>& p = state_.predicted;
    if (fixed != TrialRole::top) {
      t.role = fixed;
    } else if (r_.trials.empty() && t.value == state_.lo) {
      t.role = TrialRole::probe;
    } else if (p && t.value == *p) {
      t.role = TrialRole::prediction;
    } else {
      t.role = state_.bad ? TrialRole::bisection : TrialRole::step;
    }
    t.verifies_prediction = fixed == TrialRole::top && p && (t.value == *p || t.value == *p + 1);
  }

  // The trial's verdict into what is known; false when it is unknown (the search stops).
  bool absorb(const Trial& t) {
    state_.tried_most = std::max(state_.tried_most, t.value);
    switch (t.outcome) {
      case Outcome::completed:
        completed_.insert(t.value);
        break;
      case Outcome::oom:
        state_.bad = state_.bad ? std::min(*state_.bad, t.value) : t.value;
        break;
      case Outcome::timeout:
        r_.timed_out = true;
        return false;
      case Outcome::error:
      case Outcome::interrupted:
        r_.stopped = t.message.empty() ? "the run ended in error" : t.message;
        return false;
    }
    // The largest completion under the smallest failure: a completion above it contradicts it
    // (not monotonic), and the bracket keeps to the failure, as search_values does.
    state_.good.reset();
    for (const std::uint64_t v : completed_) {
      if (!state_.bad || v < *state_.bad) state_.good = v;
    }
    return true;
  }

  void predict() {
    if (!s_.predict || state_.predicted || r_.trials.empty()) return;
    const bool any_completed = std::any_of(r_.trials.begin(), r_.trials.end(), [](const Trial& t) {
      return t.outcome == Outcome::completed;
    });
    if (!any_completed) return;
    Prediction p = s_.predict(r_.trials);
    r_.prediction_note = std::move(p.note);
    if (!p.value) return;
    state_.predicted = std::clamp(*p.value, state_.lo, state_.hi);
    r_.predicted = p.value;
  }

  const ValueSearch& s_;
  unsigned width_;
  const RoundAt& run_round_;
  BoundaryResult& r_;
  RoundState state_;
  std::set<std::uint64_t> completed_;
};

}  // namespace

BoundaryResult search_values_in_rounds(const ValueSearch& s, unsigned width,
                                       const RoundAt& run_round) {
  if (width <= 1) {
    return search_values(s, [&](std::optional<std::uint64_t> value) {
      return run_round({value.value_or(s.lo)}).at(0);
    });
  }
  BoundaryResult r;
  Rounds rounds(s, width, run_round, r);
  if (!rounds.search()) return r;
  const RoundState& known = rounds.state();
  r.answer = known.good;
  r.beyond = known.bad;
  if (!r.answer) return r;
  const std::size_t searched = r.trials.size();
  r.confirmation = confirm_boundary(*r.answer, r.beyond, s.confirm, [&](std::uint64_t value) {
    if (!rounds.run({value}, TrialRole::confirm)) return std::optional<bool>();
    return std::optional<bool>(r.trials.back().outcome == Outcome::completed);
  });
  note_not_monotonic(r, searched, r.beyond);
  return r;
}

}  // namespace oomlab
