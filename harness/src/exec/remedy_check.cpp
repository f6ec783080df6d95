#include "exec/remedy_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace oomlab {

namespace {

// Why the run has nothing to check, or "".
std::string nothing_to_check(const RunResult& result) {
  if (result.outcome != Outcome::oom) return "the program did not run out of memory";
  if (result.models.empty()) return "the program left no snapshot for the model";
  const ProgramModel& m = result.models.front();
  if (!m.program_entry) return "the snapshot holds no OOM of the program's";
  if (!m.advised) return "the model names no setting that completes at this budget";
  return {};
}

ExecConfig rerun_config(const ExecConfig& config, const RunResult& result,
                        const std::string& alloc_conf) {
  ExecConfig again = config;
  again.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{result.budget_bytes}};
  std::erase_if(again.variables, [](const auto& v) { return v.first == kAllocConfVariable; });
  again.variables.emplace_back(kAllocConfVariable, alloc_conf);
  again.out_fd = -1;  // its output is in its files, not on the screen a second time
  again.err_fd = -1;
  again.notice = nullptr;
  again.snapshot.enabled = false;
  if (!config.folder.empty()) {
    again.folder = config.folder / "remedy_check";
    std::error_code ec;
    std::filesystem::create_directories(again.folder, ec);
    if (ec) again.folder.clear();
  }
  return again;
}

}  // namespace

std::string check_remedy(const ExecConfig& config, ExecDevices& devices, RunResult& result) {
  if (std::string why = nothing_to_check(result); !why.empty()) return why;
  ProgramModel& m = result.models.front();
  const ModelRow& row = m.whatif[*m.advised];
  RemedyCheck check{.setting = row.setting, .alloc_conf = row.alloc_conf};
  const auto given = std::find_if(config.variables.begin(), config.variables.end(),
                                  [](const auto& v) { return v.first == kAllocConfVariable; });
  // NOLINTNEXTLINE(concurrency-mt-unsafe): oomlab never changes its own environment
  const char* own = std::getenv(kAllocConfVariable);
  if (given != config.variables.end()) {
    check.replaced = given->second;
  } else if (own != nullptr) {
    check.replaced = own;
  }
  const RunResult rerun = run_exec(rerun_config(config, result, row.alloc_conf), devices);
  check.outcome = rerun.outcome;
  check.held = rerun.outcome == Outcome::completed;
  check.duration_ms = rerun.duration_ms;
  if (rerun.oom && rerun.oom->program) {
    check.line = rerun.oom->program->line;
  } else if (!rerun.error_message.empty()) {
    check.line = rerun.error_message;
  }
  m.remedy_check = std::move(check);
  return {};
}

std::string remedy_check_line(const RemedyCheck& c) {
  const std::string set = fmt::format("{}={}{}", kAllocConfVariable, c.alloc_conf,
                                      c.replaced.empty() ? ""
                                                         : fmt::format(" (replacing the "
                                                                       "program's '{}')",
                                                                       c.replaced));
  std::string verdict;
  if (c.held) {
    verdict = "the model's claim held";
  } else if (c.outcome == Outcome::oom) {
    verdict = "the model's claim did not hold";
  } else {
    verdict = fmt::format("not known whether the model's claim holds: the rerun ended in {}",
                          to_string(c.outcome));
  }
  return fmt::format("{} at the same budget: {} ({:.1f} s): {}{}", set, to_string(c.outcome),
                     c.duration_ms / 1e3, verdict, c.line.empty() ? "" : " (\"" + c.line + "\")");
}

}  // namespace oomlab
