#include "run/speculative_rounds.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {

// A run as the search asks for it: where, and the how-manieth time it asks for that place.
using Key = std::pair<std::optional<std::uint64_t>, unsigned>;
using Runs = std::map<Key, Trial>;

// Thrown through the search where it asks for a run that is neither made nor supposed.
struct NeedRun {
  Key key;
};

// The search replayed over the runs made and those supposed: its answer, or the run it needs.
struct Replay {
  std::optional<BoundaryResult> result;
  std::optional<Key> needed;
  std::vector<Key> asked;  // the runs it asked for, in order
};

Replay replay(const SequentialSearch& search, const Runs& made, const Runs& supposed) {
  Replay r;
  std::map<std::optional<std::uint64_t>, unsigned> times;
  const TrialAt at = [&](std::optional<std::uint64_t> value) -> Trial {
    const Key key{value, times[value]++};
    r.asked.push_back(key);
    if (const auto m = made.find(key); m != made.end()) return m->second;
    if (const auto s = supposed.find(key); s != supposed.end()) return s->second;
    throw NeedRun{key};
  };
  try {
    r.result = search(at);
  } catch (const NeedRun& need) {
    r.needed = need.key;
    r.asked.pop_back();
  }
  return r;
}

// The run at `key` supposed to end `completed` or out of memory.
Trial supposed_run(const Key& key, bool completed) {
  const std::uint64_t value = key.first.value_or(0);
  return {.value = value,
          .budget_bytes = value,
          .outcome = completed ? Outcome::completed : Outcome::oom};
}

// The round: the run the search needs, then, breadth first over what each run of the round may
// turn out to be, the runs it would need next.
std::vector<Key> plan_round(const SequentialSearch& search, const Runs& made, const Key& first,
                            unsigned width) {
  std::vector<Key> round = {first};
  if (!first.first) return round;  // the top run: what follows depends on what it measured
  std::deque<std::pair<Runs, Key>> open = {{Runs{}, first}};
  while (round.size() < width && !open.empty()) {
    auto [supposed, key] = std::move(open.front());
    open.pop_front();
    for (const bool completed : {true, false}) {
      Runs next = supposed;
      next[key] = supposed_run(key, completed);
      const Replay r = replay(search, made, next);
      if (!r.needed || std::find(round.begin(), round.end(), *r.needed) != round.end()) continue;
      round.push_back(*r.needed);
      open.emplace_back(std::move(next), *r.needed);
      if (round.size() >= width) break;
    }
  }
  return round;
}

}  // namespace

SpeculativeResult search_speculatively(const SequentialSearch& search, unsigned width,
                                       const SpeculativeRound& run_round,
                                       const std::function<void(const Trial&)>& on_trial) {
  SpeculativeResult out;
  Runs made;
  for (;;) {
    const Replay r = replay(search, made, {});
    if (r.result) {
      out.result = *r.result;
      for (const auto& [key, trial] : made) {
        if (std::find(r.asked.begin(), r.asked.end(), key) == r.asked.end())
          out.spare.push_back(trial);
      }
      return out;
    }
    const std::vector<Key> round = plan_round(search, made, *r.needed, std::max(width, 1U));
    std::vector<std::optional<std::uint64_t>> at;
    at.reserve(round.size());
    for (const Key& key : round)
      at.push_back(key.first);
    const std::vector<Trial> trials = run_round(at);
    if (trials.size() != round.size())
      throw Error(ErrorKind::internal, "a round gave back another number of runs");
    ++out.rounds;
    for (std::size_t i = 0; i < round.size(); ++i) {
      made[round[i]] = trials[i];
      if (on_trial) on_trial(trials[i]);
    }
  }
}

}  // namespace oomlab
