#include "reports/run/soak_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "oomlab/units.hpp"

namespace oomlab {

namespace {

std::string signed_bytes(std::int64_t bytes) {
  return fmt::format("{}{}", bytes < 0 ? "-" : "+",
                     format_bytes(static_cast<std::uint64_t>(bytes < 0 ? -bytes : bytes)));
}

struct SoakSpread {
  std::uint64_t min = 0;
  std::uint64_t median = 0;
  std::uint64_t max = 0;
};

SoakSpread oom_spread(const SoakResult& soak) {
  std::vector<std::uint64_t> live;
  for (const SoakCycle& c : soak.cycles) {
    if (c.outcome == Outcome::oom) live.push_back(c.oom_live_bytes);
  }
  if (live.empty()) return {};
  std::sort(live.begin(), live.end());
  return {live.front(), live[live.size() / 2], live.back()};
}

}  // namespace

std::vector<std::string> soak_problems(const SoakResult& soak) {
  std::vector<std::string> problems;
  if (soak.rss_growth_bytes() > kSoakRssGrowthLimit) {
    problems.push_back(
        fmt::format("resident memory grew {} after the first tenth of the cycles "
                    "(limit {})",
                    signed_bytes(soak.rss_growth_bytes()), format_bytes(kSoakRssGrowthLimit)));
  }
  if (soak.worst_device_shortfall_bytes() > kSoakDeviceShortfallLimit) {
    problems.push_back(
        fmt::format("device free memory was {} short after a cycle (limit {})",
                    format_bytes(static_cast<std::uint64_t>(soak.worst_device_shortfall_bytes())),
                    format_bytes(kSoakDeviceShortfallLimit)));
  }
  if (const std::size_t n = soak.unbalanced_cycles(); n > 0)
    problems.push_back(fmt::format("{} cycles ended with blocks not freed", n));
  const auto errors = std::count_if(soak.cycles.begin(), soak.cycles.end(),
                                    [](const SoakCycle& c) { return c.outcome == Outcome::error; });
  if (errors > 0) problems.push_back(fmt::format("{} cycles ended in error", errors));
  return problems;
}

nlohmann::ordered_json soak_json(const SoakResult& soak, std::uint32_t asked) {
  const SoakSpread spread = oom_spread(soak);
  nlohmann::ordered_json cycles = nlohmann::ordered_json::array();
  for (const SoakCycle& c : soak.cycles) {
    cycles.push_back(
        {{"outcome", to_string(c.outcome)},
         {"oom_live_bytes", c.oom_live_bytes},
         {"events", c.events},
         {"allocations", c.allocations},
         {"frees", c.frees},
         {"rss_bytes", c.rss_bytes},
         {"device_free_before", c.cleanup ? nlohmann::ordered_json(c.cleanup->device_free_before)
                                          : nlohmann::ordered_json(nullptr)},
         {"device_free_after", c.cleanup ? nlohmann::ordered_json(c.cleanup->device_free_after)
                                         : nlohmann::ordered_json(nullptr)},
         {"duration_ms", c.duration_ms}});
  }
  const std::vector<std::string> problems = soak_problems(soak);
  return {{"schema", kSoakSchema},
          {"scenario", soak.last.scenario},
          {"allocator", soak.last.allocator},
          {"budget_bytes", soak.last.budget_bytes},
          {"cycles_asked", asked},
          {"cycles", soak.cycles.size()},
          {"ooms", soak.ooms()},
          {"stopped_early", soak.stopped},
          {"oom_live_bytes", {{"min", spread.min}, {"median", spread.median}, {"max", spread.max}}},
          {"rss_before_bytes", soak.rss_before_bytes},
          {"rss_after_last_bytes", soak.cycles.empty() ? 0 : soak.cycles.back().rss_bytes},
          {"rss_growth_bytes", soak.rss_growth_bytes()},
          {"worst_device_shortfall_bytes", soak.worst_device_shortfall_bytes()},
          {"unbalanced_cycles", soak.unbalanced_cycles()},
          {"passed", problems.empty()},
          {"problems", problems},
          {"per_cycle", std::move(cycles)}};
}

std::string soak_text(const SoakResult& soak, std::uint32_t asked) {
  std::string text;
  auto it = std::back_inserter(text);
  double total_ms = 0;
  for (const SoakCycle& c : soak.cycles)
    total_ms += c.duration_ms;
  fmt::format_to(it,
                 "soak       {} of {} cycles of {} on {} · budget {} · {} OOM · {:.1f} s of runs\n",
                 soak.cycles.size(), asked, soak.last.scenario, soak.last.allocator,
                 format_bytes(soak.last.budget_bytes), soak.ooms(), total_ms / 1e3);
  if (soak.cycles.empty()) return text;
  const SoakSpread spread = oom_spread(soak);
  if (soak.ooms() > 0) {
    fmt::format_to(it, "oom point  live {} / {} / {} (min / median / max)\n",
                   format_bytes(spread.min), format_bytes(spread.median), format_bytes(spread.max));
  }
  const std::size_t settled = std::min(soak.cycles.size() - 1, soak.cycles.size() / 10);
  fmt::format_to(it, "process    resident {} before · {} after cycle {} · {} after the last ({})\n",
                 format_bytes(soak.rss_before_bytes), format_bytes(soak.cycles[settled].rss_bytes),
                 settled + 1, format_bytes(soak.cycles.back().rss_bytes),
                 signed_bytes(soak.rss_growth_bytes()));
  if (soak.cycles.front().cleanup) {
    fmt::format_to(it, "device     free memory after each cycle: worst shortfall {} (limit {})\n",
                   signed_bytes(soak.worst_device_shortfall_bytes()),
                   format_bytes(kSoakDeviceShortfallLimit));
  }
  fmt::format_to(it, "allocator  every block freed in {} of {} cycles\n",
                 soak.cycles.size() - soak.unbalanced_cycles(), soak.cycles.size());
  const std::vector<std::string> problems = soak_problems(soak);
  fmt::format_to(it, "verdict    {}\n",
                 problems.empty() ? "everything came back after every cycle"
                                  : fmt::format("FAILED: {}", fmt::join(problems, "; ")));
  return text;
}

}  // namespace oomlab
