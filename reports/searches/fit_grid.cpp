#include "reports/searches/fit_grid.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "analysis/oom_analysis.hpp"
#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/matrix/table_text.hpp"
#include "reports/run/summary_json.hpp"
#include "run/framework_model.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

// An empty value, as the table shows it: the word it was in is left out of the command.
std::string shown(const std::string& value) {
  return value.empty() ? "(empty)" : value;
}

std::string setting_words(const FitGrid& grid, const GridCell& cell) {
  std::vector<std::string> words;
  for (std::size_t a = 0; a < grid.axes.size(); ++a)
    words.push_back(fmt::format("{}={}", grid.axes[a].name, shown(cell.values[a])));
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string next_words(const FitResult& r) {
  if (r.timed_out) return "stopped: a trial timed out";
  if (!r.stopped.empty()) return "stopped: " + r.stopped;
  const Trial* next = r.at_beyond();
  if (next == nullptr) return r.answer ? "(the range's end)" : "";
  std::string how(to_string(next->outcome));
  if (!next->library.empty()) {
    how += fmt::format(" (in {})", next->library);
  } else if (next->cause) {
    how += fmt::format(" ({})", to_string(*next->cause));
  }
  return fmt::format("{}: {}", next->value, how);
}

std::string predicted_words(const FitResult& r) {
  if (!r.predicted) return "-";
  if (!r.answer || *r.answer == *r.predicted) return std::to_string(*r.predicted);
  const auto off = static_cast<long long>(*r.predicted) - static_cast<long long>(*r.answer);
  return fmt::format("{} ({:+})", *r.predicted, off);
}

double run_seconds(const FitResult& r) {
  double seconds = 0.0;
  for (const Trial& t : r.trials)
    seconds += t.seconds;
  return seconds;
}

// The header and one row a combination, as words.
std::vector<std::vector<std::string>> rows(const FitGrid& grid) {
  std::vector<std::string> header;
  for (const GridAxis& axis : grid.axes)
    header.push_back(axis.name);
  for (const char* word : {"", "next", "runs", "predicted", "s of runs"})
    header.emplace_back(word);
  header[grid.axes.size()] = grid.range.name;
  std::vector<std::vector<std::string>> out = {header};
  for (const GridCell& cell : grid.cells) {
    std::vector<std::string> row;
    for (const std::string& value : cell.values)
      row.push_back(shown(value));
    const FitResult& r = cell.fit;
    row.push_back(r.answer ? std::to_string(*r.answer) : "none");
    row.push_back(next_words(r));
    row.push_back(std::to_string(r.runs()));
    row.push_back(predicted_words(r));
    row.push_back(fmt::format("{:.1f}", run_seconds(r)));
    out.push_back(std::move(row));
  }
  return out;
}

std::size_t total_runs(const FitGrid& grid) {
  std::size_t runs = 0;
  for (const GridCell& cell : grid.cells)
    runs += cell.fit.runs();
  return runs;
}

std::uint64_t budget_of(const FitGrid& grid) {
  for (const GridCell& cell : grid.cells) {
    if (cell.fit.budget_bytes > 0) return cell.fit.budget_bytes;
  }
  return 0;
}

}  // namespace

std::optional<std::size_t> best_cell(const FitGrid& grid) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < grid.cells.size(); ++i) {
    const std::optional<std::uint64_t>& answer = grid.cells[i].fit.answer;
    if (answer && (!best || *answer > *grid.cells[*best].fit.answer)) best = i;
  }
  return best;
}

std::string grid_answer(const FitGrid& grid) {
  const std::string tally =
      fmt::format("{} settings, {} runs on {} GPU{}, {:.1f} s", grid.cells.size(), total_runs(grid),
                  grid.gpus, grid.gpus == 1 ? "" : "s", grid.seconds);
  const std::string budget = format_bytes(budget_of(grid));
  const std::optional<std::size_t> best = best_cell(grid);
  if (!best) {
    return fmt::format("no setting completes even at {}={} under {} ({})", grid.range.name,
                       grid.range.lo, budget, tally);
  }
  const GridCell& cell = grid.cells[*best];
  std::size_t equal = 0;
  for (const GridCell& c : grid.cells)
    equal += c.fit.answer == cell.fit.answer ? 1 : 0;
  const std::string also = equal > 1 ? fmt::format(" (and {} other setting{} as large)", equal - 1,
                                                   equal == 2 ? "" : "s")
                                     : "";
  return fmt::format("the largest {} under {}: {}, with {}{} ({})", grid.range.name, budget,
                     *cell.fit.answer, setting_words(grid, cell), also, tally);
}

std::string grid_text(const FitGrid& grid) {
  const std::vector<std::vector<std::string>> table = rows(grid);
  std::vector<std::size_t> widths(table.front().size(), 0);
  for (const auto& row : table) {
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : table) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c)
      line += fmt::format(" {:<{}}", row[c], c + 1 == row.size() ? 0 : widths[c]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::string grid_markdown(const FitGrid& grid, const std::vector<std::string>& command) {
  const std::vector<std::vector<std::string>> table = rows(grid);
  std::string out = fmt::format("# fit exec grid\n\n**{}**\n\n`{}`\n\n", grid_answer(grid),
                                markdown_cell(fmt::format("{}", fmt::join(command, " "))));
  for (std::size_t r = 0; r < table.size(); ++r) {
    out += "|";
    for (const std::string& cell : table[r])
      out += " " + markdown_cell(cell) + " |";
    out += '\n';
    if (r == 0) {
      out += "|";
      for (std::size_t c = 0; c < table[r].size(); ++c)
        out += c < grid.axes.size() ? " --- |" : " ---: |";
      out += '\n';
    }
  }
  return out;
}

json fit_grid_json(const SearchSubject& subject, const FitGrid& grid) {
  json axes = json::array();
  for (const GridAxis& axis : grid.axes)
    axes.push_back({{"name", axis.name}, {"values", axis.values}});
  json settings = json::array();
  SearchSubject each = subject;
  each.environment.reset();  // written once, at the top
  for (const GridCell& cell : grid.cells) {
    json setting = json::object();
    for (std::size_t a = 0; a < grid.axes.size(); ++a)
      setting[grid.axes[a].name] = cell.values[a];
    const FitResult& r = cell.fit;
    settings.push_back({{"setting", setting},
                        {"value", r.answer ? json(*r.answer) : json(nullptr)},
                        {"next_value", r.beyond ? json(*r.beyond) : json(nullptr)},
                        {"runs", r.runs()},
                        {"predicted", r.predicted ? json(*r.predicted) : json(nullptr)},
                        {"fit", fit_json(each, r, setting_words(grid, cell))}});
  }
  const std::optional<std::size_t> best = best_cell(grid);
  json doc = {{"schema", kFitGridSchema},
              {"oomlab", version_json()},
              {"command", subject.command},
              {"range", {{"name", grid.range.name}, {"lo", grid.range.lo}, {"hi", grid.range.hi}}},
              {"budget_bytes", budget_of(grid)},
              {"axes", axes},
              {"gpus", grid.gpus},
              {"seconds", grid.seconds},
              {"runs", total_runs(grid)},
              {"best", best ? json(*best) : json(nullptr)},
              {"settings", settings}};
  if (subject.environment)
    doc["environment"] = environment_json(*subject.environment, subject.device, false);
  doc["answer"] = grid_answer(grid);
  return doc;
}

}  // namespace oomlab
