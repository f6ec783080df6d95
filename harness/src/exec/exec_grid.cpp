#include "exec/exec_grid.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "oomlab/error.hpp"

namespace oomlab {

std::vector<std::vector<std::string>> grid_combinations(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> out = {{}};
  for (const GridAxis& axis : axes) {
    std::vector<std::vector<std::string>> grown;
    grown.reserve(out.size() * axis.values.size());
    for (const std::vector<std::string>& before : out) {
      for (const std::string& value : axis.values) {
        grown.push_back(before);
        grown.back().push_back(value);
      }
    }
    out = std::move(grown);
  }
  return out;
}

ExecConfig config_at_combination(const ExecConfig& base, const std::vector<GridAxis>& axes,
                                 const std::vector<std::string>& values) {
  ExecConfig c = base;
  std::vector<std::string> command;
  for (const std::string& original : base.command) {
    std::string word = original;
    bool placed = false;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const std::string placeholder = "{" + axes[a].name + "}";
      for (std::size_t at = word.find(placeholder); at != std::string::npos;
           at = word.find(placeholder, at + values[a].size())) {
        word.replace(at, placeholder.size(), values[a]);
        placed = true;
      }
    }
    if (!(placed && word.empty())) command.push_back(std::move(word));
  }
  c.command = std::move(command);
  for (std::size_t a = 0; a < axes.size(); ++a)
    c.program_environment.emplace_back(fit_variable(axes[a].name), values[a]);
  return c;
}

std::vector<std::vector<std::size_t>> grid_groups(std::size_t combinations, std::size_t gpus) {
  const std::size_t n = std::min(combinations, gpus);
  std::vector<std::vector<std::size_t>> groups(n);
  for (std::size_t g = 0; g < gpus && n > 0; ++g)
    groups[g * n / gpus].push_back(g);
  return groups;
}

namespace {

// The searches at once, a group of GPUs each; their callbacks one at a time.
class GridRuns {
 public:
  GridRuns(const ExecConfig& base, std::span<ExecDevices* const> gpus, const ExecGridSearch& search)
      : base_(base), gpus_(gpus), search_(search) {
    for (std::vector<std::string>& values : grid_combinations(search.axes))
      cells_.push_back({.values = std::move(values), .fit = {}});
  }

  std::vector<GridCell> run() {
    const std::vector<std::vector<std::size_t>> groups = grid_groups(cells_.size(), gpus_.size());
    // As many combinations as groups: each its own; more: taken in order as groups come free.
    const bool own = groups.size() == cells_.size();
    {
      std::vector<std::jthread> workers;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        workers.emplace_back([this, &groups, g, own] {
          std::vector<ExecDevices*> devices;
          for (const std::size_t i : groups[g])
            devices.push_back(gpus_[i]);
          if (own) {
            search_one(g, devices);
            return;
          }
          for (std::size_t cell = next_++; cell < cells_.size(); cell = next_++)
            search_one(cell, devices);
        });
      }
    }  // joins
    if (error_) std::rethrow_exception(error_);
    return std::move(cells_);
  }

 private:
  void search_one(std::size_t cell, const std::vector<ExecDevices*>& devices) {
    if (failed_.load()) return;
    ExecConfig config = config_at_combination(base_, search_.axes, cells_[cell].values);
    if (cell > 0) config.notice = nullptr;  // the first combination's notices are enough
    ExecFitSearch fit = search_.fit;
    fit.on_round = nullptr;
    fit.on_trial = [this, cell](const Trial& t) {
      if (!search_.on_trial) return;
      const std::lock_guard lock(mutex_);
      search_.on_trial(cell, t);
    };
    try {
      say([&] {
        if (search_.on_start) search_.on_start(cell);
      });
      cells_[cell].fit = fit_exec(config, devices, fit);
      say([&] {
        if (search_.on_done) search_.on_done(cell, cells_[cell].fit);
      });
    } catch (...) {
      const std::lock_guard lock(mutex_);
      // An interruption is the answer every search gives; another error stops the rest.
      if (!error_) error_ = std::current_exception();
      failed_.store(true);
    }
  }

  template <typename Fn>
  void say(Fn&& fn) {
    const std::lock_guard lock(mutex_);
    fn();
  }

  const ExecConfig& base_;
  std::span<ExecDevices* const> gpus_;
  const ExecGridSearch& search_;
  std::vector<GridCell> cells_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace

std::vector<GridCell> fit_exec_grid(const ExecConfig& base, std::span<ExecDevices* const> gpus,
                                    const ExecGridSearch& search) {
  if (gpus.empty()) throw Error(ErrorKind::internal, "a grid needs a GPU");
  GridRuns runs(base, gpus, search);
  return runs.run();
}

}  // namespace oomlab
