#include "exec/exec_fit.hpp"

#include <fmt/format.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp is POSIX

#include <cctype>
#include <cmath>
#include <filesystem>

#include "exec/exec_frontier.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

// Where the trials' snapshots go, one folder each: the search's own, removed at its end. Empty
// when none could be made (the trials then record none, and the search goes unguided).
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (fs::temp_directory_path() / "oomlab-fit-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ScratchFolder(ScratchFolder&&) = delete;
  ScratchFolder& operator=(ScratchFolder&&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// What the model said of each completed run (value, whole-process need), and what it could not.
class Needs {
 public:
  void add(std::uint64_t value, std::uint64_t need) { needs_.emplace_back(value, need); }
  void missing(std::string why) { missing_ = std::move(why); }
  [[nodiscard]] Prediction predict(std::uint64_t budget, const std::string& name) const {
    if (needs_.size() < 2) {
      if (!missing_.empty()) return {.note = "no prediction: " + missing_};
      return {.note = "no prediction: the model needs two runs that completed"};
    }
    const auto& smaller = needs_[needs_.size() - 2];
    const auto& larger = needs_.back();
    return predict_largest(smaller, larger, budget, name);
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> needs_;
  std::string missing_;
};

}  // namespace

std::vector<std::string> command_at(const std::vector<std::string>& command,
                                    const std::string& name, std::uint64_t value) {
  const std::string placeholder = "{" + name + "}";
  const std::string text = std::to_string(value);
  std::vector<std::string> out = command;
  for (std::string& word : out) {
    for (std::size_t at = word.find(placeholder); at != std::string::npos;
         at = word.find(placeholder, at + text.size()))
      word.replace(at, placeholder.size(), text);
  }
  return out;
}

std::string fit_variable(const std::string& name) {
  std::string out = "OOMLAB_FIT_";
  for (const char c : name)
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

Prediction predict_largest(std::pair<std::uint64_t, std::uint64_t> smaller,
                           std::pair<std::uint64_t, std::uint64_t> larger, std::uint64_t budget,
                           const std::string& name) {
  const auto [v1, n1] = smaller;
  const auto [v2, n2] = larger;
  if (v2 <= v1 || n2 <= n1) {
    return {.note = fmt::format(
                "no prediction: the model's need at {}={} ({}) is no more than at {}={} ({})", name,
                v2, format_bytes(n2), name, v1, format_bytes(n1))};
  }
  const long double per = static_cast<long double>(n2 - n1) / static_cast<long double>(v2 - v1);
  const long double room = static_cast<long double>(budget) - static_cast<long double>(n1);
  const long double reach = static_cast<long double>(v1) + std::floor(room / per);
  const std::uint64_t value = reach <= 0 ? 0 : static_cast<std::uint64_t>(reach);
  return {.value = value,
          .note = fmt::format("predicted {}={}: the model's whole-process need is {} at {}={} and "
                              "{} at {}={}, {} more for each 1 of {}; a budget of {} holds {}={}",
                              name, value, format_bytes(n1), name, v1, format_bytes(n2), name, v2,
                              format_bytes(static_cast<std::uint64_t>(per)), name,
                              format_bytes(budget), name, value)};
}

FitResult fit_exec(const ExecConfig& base, ExecDevices& devices, const ExecFitSearch& search) {
  FitResult result;
  result.range = search.range;
  result.allocator = "exec";
  ExecConfig config = base;
  config.folder.clear();  // trials keep no files; the table holds what matters
  config.out_fd = -1;
  config.err_fd = -1;
  const std::string& name = search.range.name;
  const ScratchFolder scratch;
  const bool guided = search.need_of && base.snapshot.enabled && !scratch.path().empty();
  Needs needs;
  bool predicted = false;  // after the prediction, runs record no snapshot
  bool first = true;
  unsigned count = 0;
  const TrialAt trial_at = [&](std::optional<std::uint64_t> at) {
    const std::uint64_t value = at.value_or(search.range.lo);
    config.command = command_at(base.command, name, value);
    config.program_environment = base.program_environment;
    config.program_environment.emplace_back(fit_variable(name), std::to_string(value));
    const bool snapshot = guided && !predicted;
    config.snapshot.enabled = snapshot;
    config.snapshot.folder = snapshot ? scratch.path() / fmt::format("run-{}", ++count) : "";
    RunResult run = run_exec(config, devices);
    config.notice = nullptr;  // the first run's notices are enough
    if (first) {
      first = false;
      result.budget_bytes = run.budget_bytes;
      result.environment = run.environment;
      result.device = run.device;
    }
    if (snapshot && run.outcome == Outcome::completed) {
      if (const std::optional<std::uint64_t> need = search.need_of(run)) {
        needs.add(value, *need);
      } else {
        needs.missing(fmt::format("the run at {}={} gave the model nothing to read{}", name, value,
                                  run.program && !run.program->snapshot_note.empty()
                                      ? " (" + run.program->snapshot_note + ")"
                                      : ""));
      }
    }
    std::error_code ec;
    if (snapshot) fs::remove_all(config.snapshot.folder, ec);  // read: no longer needed
    Trial trial = program_trial(run);
    trial.value = value;
    return trial;
  };
  ValueSearch values{.lo = search.range.lo,
                     .hi = search.range.hi,
                     .confirm = search.confirm,
                     .on_trial = search.on_trial};
  if (guided) {
    values.predict = [&](const std::vector<Trial>&) {
      Prediction p = needs.predict(result.budget_bytes, name);
      predicted = predicted || p.value.has_value();
      return p;
    };
  }
  static_cast<BoundaryResult&>(result) = search_values(values, trial_at);
  return result;
}

}  // namespace oomlab
