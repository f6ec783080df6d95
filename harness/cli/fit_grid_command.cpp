#include "cli/fit_grid_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <set>

#include "cli/fit_options.hpp"
#include "cli/output_flag.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "exec/exec_frontier.hpp"
#include "oomlab/error.hpp"
#include "reports/searches/fit_grid.hpp"

namespace oomlab::cli {

namespace {

std::string setting_label(const std::vector<GridAxis>& axes,
                          const std::vector<std::string>& values) {
  std::vector<std::string> words;
  for (std::size_t a = 0; a < axes.size(); ++a)
    words.push_back(fmt::format("{}={}", axes[a].name, values[a]));
  return fmt::format("{}", fmt::join(words, " "));
}

// What runs and what is done, redrawn on a terminal as searches start and trials end.
class GridProgress {
 public:
  GridProgress(Console& console, const std::vector<GridAxis>& axes, std::size_t settings)
      : console_(console), axes_(axes), settings_(settings) {}
  void start(std::size_t cell) {
    running_.insert(cell);
    draw();
  }
  void trial() {
    ++runs_;
    draw();
  }
  void done(std::size_t cell) {
    running_.erase(cell);
    ++done_;
    draw();
  }

 private:
  void draw() {
    const auto combinations = grid_combinations(axes_);
    std::vector<std::string> now;
    for (const std::size_t cell : running_)
      now.push_back(setting_label(axes_, combinations[cell]));
    console_.progress(fmt::format(
        "fit exec grid · {} of {} settings done, {} left · {} run{} · "
        "running: {}",
        done_, settings_, settings_ - done_, runs_, runs_ == 1 ? "" : "s", fmt::join(now, "; ")));
  }

  Console& console_;
  const std::vector<GridAxis>& axes_;
  std::size_t settings_;
  std::set<std::size_t> running_;
  std::size_t done_ = 0;
  std::size_t runs_ = 0;
};

int grid_exit_code(const FitGrid& grid) {
  int code = kExitOk;
  bool any = false;
  for (const GridCell& cell : grid.cells) {
    const FitResult& r = cell.fit;
    any = any || r.answer.has_value();
    if (r.timed_out) return kExitCellFailed;
    if (!r.stopped.empty() || r.not_monotonic) code = kExitCheckFailed;
  }
  return any ? code : kExitCheckFailed;
}

}  // namespace

int fit_grid_command(const FitExecOptions& options, const ExecConfig& config,
                     ExecSearchSession& session, Console& console, ExecGridSearch search,
                     std::ostream& out, std::ostream& err) {
  const ExecOptions& o = options.exec;
  const std::vector<std::vector<std::string>> combinations = grid_combinations(search.axes);
  GridProgress progress(console, search.axes, combinations.size());
  search.on_start = [&](std::size_t cell) { progress.start(cell); };
  search.on_trial = [&](std::size_t cell, const Trial& t) {
    console.end_progress();
    if (!o.quiet) {
      err << fmt::format("[{}] {}\n", setting_label(search.axes, combinations[cell]),
                         value_trial_line(search.fit.range.name, t))
          << std::flush;
    }
    progress.trial();
  };
  search.on_done = [&](std::size_t cell, const FitResult&) { progress.done(cell); };
  const std::vector<ExecDevices*> gpus = session.gpus();
  const auto start = std::chrono::steady_clock::now();
  FitGrid grid{.range = search.fit.range, .axes = search.axes, .gpus = gpus.size()};
  try {
    grid.cells = fit_exec_grid(config, gpus, search);
  } catch (const Interrupted&) {
    console.end_progress();
    err << "oomlab: interrupted: the grid stopped; every program's group was ended and every "
           "ballast freed\n";
    return kExitInterrupted;
  }
  console.end_progress();
  grid.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  session.close();
  std::optional<Environment> environment;
  std::optional<DeviceFacts> device;
  if (!grid.cells.empty()) {
    environment = grid.cells.front().fit.environment;
    device = grid.cells.front().fit.device;
  }
  const SearchSubject subject{.scenario = "exec",
                              .command = o.command,
                              .allocator = "exec",
                              .environment = environment,
                              .device = device,
                              .kept_back_bytes = kept_back_bytes(device ? &*device : nullptr)};
  std::ostream& said = to_stdout(o.json) || to_stdout(options.markdown) ? err : out;
  said << grid_answer(grid) << '\n';
  if (!o.quiet) said << grid_text(grid);
  const std::string markdown = grid_markdown(grid, o.command);
  write_search_json(o.json, o.out, "fit.json", fit_grid_json(subject, grid).dump(2) + "\n", out);
  try {
    emit_output(options.markdown, markdown, out);
    if (!o.out.empty()) write_output_file(std::filesystem::path(o.out) / "report.md", markdown);
  } catch (const Error& e) {
    throw Error(ErrorKind::io, fmt::format("--markdown: {}", e.what()));
  }
  return grid_exit_code(grid);
}

}  // namespace oomlab::cli
