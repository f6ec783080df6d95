#include "reports/matrix/matrix_json.hpp"

#include <algorithm>
#include <array>

#include "reports/run/summary_json.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

const json* oom_of(const MatrixRepeat& r) {
  if (!r.summary.is_object()) return nullptr;
  const auto it = r.summary.find("oom");
  return it != r.summary.end() && it->is_object() ? &*it : nullptr;
}

json repeat_json(const MatrixRepeat& r) {
  json j = {{"outcome", r.outcome},
            {"exit_code", r.exit_code},
            {"signal", r.signal ? json(*r.signal) : json(nullptr)},
            {"duration_ms", r.duration_ms},
            {"dir", r.dir}};
  const json* oom = oom_of(r);
  for (const char* name : {"event", "step", "live_bytes", "request_bytes"}) {
    j[std::string("oom_") + name] =
        oom != nullptr ? json(unsigned_field(*oom, name)) : json(nullptr);
  }
  return j;
}

std::optional<RepeatSpread> spread_of(const MatrixCell& cell, const char* name) {
  std::vector<std::uint64_t> values;
  for (const MatrixRepeat& r : cell.repeats) {
    if (const json* oom = oom_of(r)) values.push_back(unsigned_field(*oom, name));
  }
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return RepeatSpread{values.front(), values[(values.size() - 1) / 2], values.back()};
}

json spread_json(const std::optional<RepeatSpread>& s) {
  if (!s) return nullptr;
  return {{"min", s->min}, {"median", s->median}, {"max", s->max}};
}

json spread_json(const MatrixCell& cell) {
  const std::optional<CellSpread> spread = cell_spread(cell);
  if (!spread) return nullptr;
  return {{"runs", spread->runs},
          {"oom_runs", spread->oom_runs},
          {"oom_live_bytes", spread_json(spread->oom_live_bytes)},
          {"oom_step", spread_json(spread->oom_step)},
          {"oom_event", spread_json(spread->oom_event)}};
}

}  // namespace

std::uint64_t unsigned_field(const json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

std::optional<CellSpread> cell_spread(const MatrixCell& cell) {
  if (cell.repeats.size() < 2) return std::nullopt;
  const auto oom_runs = std::count_if(cell.repeats.begin(), cell.repeats.end(),
                                      [](const MatrixRepeat& r) { return oom_of(r) != nullptr; });
  return CellSpread{.runs = cell.repeats.size(),
                    .oom_runs = static_cast<std::size_t>(oom_runs),
                    .oom_live_bytes = spread_of(cell, "live_bytes"),
                    .oom_step = spread_of(cell, "step"),
                    .oom_event = spread_of(cell, "event")};
}

std::string cell_outcome(const MatrixCell& cell) {
  constexpr std::array<std::string_view, 5> kWorstFirst = {"crash", "timeout", "error",
                                                           "interrupted", "oom"};
  for (const std::string_view outcome : kWorstFirst) {
    if (std::any_of(cell.repeats.begin(), cell.repeats.end(),
                    [&](const MatrixRepeat& r) { return r.outcome == outcome; }))
      return std::string(outcome);
  }
  return cell.repeats.empty() ? "missing" : cell.repeats.front().outcome;
}

std::size_t representative_repeat(const MatrixCell& cell) {
  std::vector<std::pair<std::uint64_t, std::size_t>> ooms;
  for (std::size_t i = 0; i < cell.repeats.size(); ++i) {
    if (const json* oom = oom_of(cell.repeats[i]))
      ooms.emplace_back(unsigned_field(*oom, "live_bytes"), i);
  }
  if (!ooms.empty()) {
    std::sort(ooms.begin(), ooms.end());
    return ooms[(ooms.size() - 1) / 2].second;
  }
  for (std::size_t i = 0; i < cell.repeats.size(); ++i) {
    if (cell.repeats[i].summary.is_object()) return i;
  }
  return 0;
}

json cell_json(const MatrixCell& cell) {
  json j = {{"id", cell.id},
            {"scenario", cell.scenario},
            {"allocator", cell.allocator},
            {"device", cell.device},
            {"budget", cell.budget},
            {"key", cell.key},
            {"outcome", cell_outcome(cell)}};
  if (cell.repeats.empty()) return j;
  const MatrixRepeat& shown = cell.repeats[representative_repeat(cell)];
  // The worst repeat's exit and lines: a crash in repeat 3 must not hide behind repeat 1's success.
  const auto worst = std::find_if(cell.repeats.begin(), cell.repeats.end(),
                                  [&](const MatrixRepeat& r) { return r.outcome == j["outcome"]; });
  const MatrixRepeat& telling = worst != cell.repeats.end() ? *worst : shown;
  double total_ms = 0;
  for (const MatrixRepeat& r : cell.repeats)
    total_ms += r.duration_ms;
  j["exit_code"] = telling.exit_code;
  j["signal"] = telling.signal ? json(*telling.signal) : json(nullptr);
  j["duration_ms"] = total_ms;
  j["dir"] = cell.repeats.size() == 1 ? shown.dir : cell.id;
  j["last_lines"] = telling.last_lines;
  j["summary"] = shown.summary;
  j["repeats"] = json::array();
  for (const MatrixRepeat& r : cell.repeats)
    j["repeats"].push_back(repeat_json(r));
  j["spread"] = spread_json(cell);
  return j;
}

json matrix_json(const json& environment, const json& config,
                 const std::vector<MatrixCell>& cells) {
  json j = {{"schema", kMatrixSchema},
            {"oomlab", version_json()},
            {"environment", environment},
            {"config", config}};
  j["cells"] = json::array();
  for (const MatrixCell& cell : cells)
    j["cells"].push_back(cell_json(cell));
  return j;
}

}  // namespace oomlab
