#include "pytorch/settings/series_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/model/torch_options.hpp"
#include "pytorch/settings/torch_settings.hpp"
#include "run/parallel_each.hpp"
#include "run/runner.hpp"

namespace oomlab::torch {

namespace {

constexpr std::uint64_t kPage = 2ULL << 20U;

// The traces made at each value, once each, for every row.
class MadeTraces {
 public:
  MadeTraces(const trace::TraceSeries& series, trace::TraceSeries::Rule rule)
      : series_(series), rule_(rule) {}
  std::shared_ptr<const trace::Trace> at(std::uint64_t value) {
    {
      const std::lock_guard lock(mutex_);
      if (const auto it = made_.find(value); it != made_.end()) return it->second;
    }
    auto made = std::make_shared<const trace::Trace>(series_.at(value, rule_));
    const std::lock_guard lock(mutex_);
    return made_.try_emplace(value, std::move(made)).first->second;
  }

 private:
  const trace::TraceSeries& series_;
  trace::TraceSeries::Rule rule_;
  std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<const trace::Trace>> made_;
};

// The replay every trial is: the registry's trace player on torch over the sim.
RunConfig replay_config(const trace::TraceSeries& series, const std::atomic<bool>* stop) {
  const Registry::Entry* player = Registry::global().trace_player();
  if (player == nullptr) throw Error(ErrorKind::internal, "no scenario replays traces");
  RunConfig config;
  config.params = Params(player->params);
  config.params.set("trace", series.points().back().trace->source.string());
  config.allocator = torch::torch_kind();
  config.probe = false;
  config.verify = VerifyMode::off;
  config.stop = stop;
  return config;
}

// One setting's frontiers, value by value, each searched from a guess drawn from those found.
class RowSearch {
 public:
  RowSearch(RunConfig config, MadeTraces& made, std::uint64_t card_bytes)
      : config_(std::move(config)), made_(made), top_(card_bytes / kPage) {}

  std::optional<std::uint64_t> frontier(std::uint64_t value) {
    if (const auto it = found_.find(value); it != found_.end()) return it->second;
    config_.trace = made_.at(value);
    const std::uint64_t peak = config_.trace->demand.peak_live_bytes;
    const std::uint64_t least = std::max<std::uint64_t>(1, (peak + kPage - 1) / kPage);
    const std::uint64_t guess = std::max(least, guess_pages(value, peak));
    const std::optional<std::uint64_t> pages = search(std::min(guess, top_), least);
    const std::optional<std::uint64_t> out =
        pages ? std::optional<std::uint64_t>(*pages * kPage) : std::nullopt;
    found_[value] = out;
    peaks_[value] = peak;
    return out;
  }

  [[nodiscard]] std::size_t replays() const { return replays_; }

 private:
  bool completes(std::uint64_t pages) {
    config_.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{pages * kPage}};
    ++replays_;
    const RunResult r = run_scenario(config_);
    if (r.outcome == Outcome::interrupted) throw Interrupted();
    if (r.outcome == Outcome::error || r.outcome == Outcome::timeout) {
      throw Error(ErrorKind::device, fmt::format("the replay at a budget of {} ended in error: {}",
                                                 format_bytes(pages * kPage), r.error_message));
    }
    return r.outcome == Outcome::completed;
  }

  // The least number of pages that completes, from `guess`; none when the top does not.
  std::optional<std::uint64_t> search(std::uint64_t guess, std::uint64_t least) {
    std::uint64_t good = 0;  // completes (0: none known)
    std::uint64_t bad = 0;   // fails (least - 1 is known to)
    if (completes(guess)) {
      good = guess;
      bad = least - 1;
      for (std::uint64_t step = 1; good > least;) {
        const std::uint64_t below = good - std::min(step, good - least);
        if (!completes(below)) {
          bad = below;
          break;
        }
        good = below;
        step *= 2;
      }
    } else {
      bad = guess;
      for (std::uint64_t step = 1;; step *= 2) {
        const std::uint64_t above = std::min(bad + step, top_);
        if (completes(above)) {
          good = above;
          break;
        }
        bad = above;
        if (above == top_) return std::nullopt;
      }
    }
    while (good - bad > 1) {
      const std::uint64_t mid = bad + (good - bad) / 2;
      (completes(mid) ? good : bad) = mid;
    }
    return good;
  }

  // Where the search starts: on the line through the frontiers of the two nearest values found;
  // from one, that frontier moved by the difference of the two traces' peaks; from none, the
  // peak itself (no budget under it holds the trace).
  [[nodiscard]] std::uint64_t guess_pages(std::uint64_t value, std::uint64_t peak) const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> near;  // (value, frontier), nearest first
    for (const auto& [at, bytes] : found_) {
      if (bytes) near.emplace_back(at, *bytes);
    }
    const auto distance = [&](std::uint64_t v) { return v > value ? v - value : value - v; };
    std::sort(near.begin(), near.end(),
              [&](const auto& a, const auto& b) { return distance(a.first) < distance(b.first); });
    long double bytes = static_cast<long double>(peak);
    if (near.size() >= 2) {
      const auto [a, fa] = near[0];
      const auto [b, fb] = near[1];
      const long double per = (static_cast<long double>(fb) - static_cast<long double>(fa)) /
                              (static_cast<long double>(b) - static_cast<long double>(a));
      bytes = static_cast<long double>(fa) +
              per * (static_cast<long double>(value) - static_cast<long double>(a));
    } else if (near.size() == 1) {
      bytes = static_cast<long double>(near[0].second) + static_cast<long double>(peak) -
              static_cast<long double>(peaks_.at(near[0].first));
    }
    return static_cast<std::uint64_t>(std::max<long double>(bytes, 0) / kPage);
  }

  RunConfig config_;
  MadeTraces& made_;
  std::uint64_t top_;
  std::map<std::uint64_t, std::optional<std::uint64_t>> found_;
  std::map<std::uint64_t, std::uint64_t> peaks_;
  std::size_t replays_ = 0;
};

// The largest value of the range whose frontier `budget` holds: bisection over the values.
std::optional<std::uint64_t> largest_held(RowSearch& row, const FitRange& range,
                                          std::uint64_t budget) {
  const auto holds = [&](std::uint64_t v) {
    const std::optional<std::uint64_t> f = row.frontier(v);
    return f && *f <= budget;
  };
  if (!holds(range.lo)) return std::nullopt;
  std::uint64_t good = range.lo;
  std::uint64_t bad = range.hi + 1;
  if (holds(range.hi)) return range.hi;
  bad = range.hi;
  while (bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    (holds(mid) ? good : bad) = mid;
  }
  return good;
}

}  // namespace

SeriesTable series_table(const SeriesTableRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<TorchSetting> settings = torch_settings(request.card_bytes, BudgetQuestion::card);
  if (request.own_options) {
    Params own = *request.own_options;
    own.set("upstream", std::string("sim"));
    own.set("total", Bytes{request.card_bytes});
    settings.push_back({request.own_name, own, own.choice("budget_by") == "fraction"});
  }
  MadeTraces made(*request.series, request.rule);
  const RunConfig base = replay_config(*request.series, request.stop);
  SeriesTable table;
  table.rows.resize(settings.size());
  parallel_each(settings.size(), request.threads, [&](std::size_t i) {
    RunConfig config = base;
    config.allocator_options = settings[i].options;
    RowSearch search(config, made, request.card_bytes);
    SeriesRow& row = table.rows[i];
    row.setting = settings[i].name;
    row.fraction_cap = settings[i].fraction;
    row.approximate = settings[i].options.choice("backend") == "async";
    row.settings = torch::alloc_conf(
        torch::resolve_torch(settings[i].options,
                             trace::allocator_settings(*request.series->points().back().trace))
            .effective);
    for (const std::uint64_t v : request.values)
      row.frontiers.push_back(search.frontier(v));
    for (const SeriesCard& card : request.cards)
      row.largest.push_back(largest_held(search, request.range, card.budget_bytes));
    row.replays = search.replays();
  });
  for (const SeriesRow& row : table.rows)
    table.replays += row.replays;
  table.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return table;
}

namespace {

// Torch over the sim with the snapshot's own settings (they fill in what is not set).
RunConfig as_recorded(const trace::TraceSeries& series, std::uint64_t card_bytes,
                      const std::atomic<bool>* stop) {
  RunConfig config = replay_config(series, stop);
  Params options(backend_info(torch::torch_kind()).options);
  options.set("upstream", std::string("sim"));
  options.set("total", Bytes{std::max<std::uint64_t>(card_bytes, 80ULL << 30U)});
  config.allocator_options = options;
  return config;
}

}  // namespace

std::optional<std::uint64_t> frontier_as_recorded(const trace::TraceSeries& series,
                                                  std::uint64_t value, std::uint64_t card_bytes,
                                                  const std::atomic<bool>* stop,
                                                  trace::TraceSeries::Rule rule) {
  MadeTraces made(series, rule);
  RowSearch search(as_recorded(series, card_bytes, stop), made, card_bytes);
  return search.frontier(value);
}

FitResult fit_as_recorded(const trace::TraceSeries& series, const FitRange& range,
                          std::uint64_t budget_bytes, const std::atomic<bool>* stop,
                          trace::TraceSeries::Rule rule) {
  RunConfig config = as_recorded(series, budget_bytes, stop);
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{budget_bytes}};
  return fit_series(config, series, {.range = range}, rule);
}

}  // namespace oomlab::torch
