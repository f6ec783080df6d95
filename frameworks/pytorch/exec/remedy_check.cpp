#include "pytorch/exec/remedy_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "pytorch/exec/library_oom.hpp"
#include "run/parallel_each.hpp"
#include "run/remedy_rerun.hpp"

namespace oomlab::torch {

namespace {

constexpr const char* kCapVariable = "OOMLAB_ALLOCATOR_CAP_BYTES";  // read by the exec shim

// Why the run has nothing to check, or "".
std::string nothing_to_check(const RunResult& result) {
  if (result.outcome != Outcome::oom) return "the program did not run out of memory";
  if (result.models.empty()) return "the program left no snapshot for the model";
  const ProgramModel& m = result.models.front();
  if (m.library_oom) return {};
  if (!m.program_entry) return "the snapshot holds no OOM of the program's";
  if (!m.advised) return "the model names no setting that completes at this budget";
  return {};
}

// The same program at the same budget, with `check`'s setting: PYTORCH_CUDA_ALLOC_CONF replaced
// by its alloc_conf, or, for a cap on the allocator, the program's own settings and the cap.
ExecConfig rerun_config(const ExecConfig& config, const RunResult& result, const RemedyCheck& check,
                        const char* folder = "remedy_check") {
  ExecConfig again = config;
  again.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{result.budget_bytes}};
  again.out_fd = -1;  // its output is in its files, not on the screen a second time
  again.err_fd = -1;
  again.notice = nullptr;
  again.snapshot.enabled = false;
  if (check.allocator_cap_bytes) {
    again.variables.emplace_back(kCapVariable, std::to_string(*check.allocator_cap_bytes));
    again.snapshot.enabled = true;  // the shim sets the cap; its snapshot stays in the rerun's
    again.snapshot.folder.clear();  // folder (a temporary one without a run folder)
  } else {
    std::erase_if(again.variables, [](const auto& v) { return v.first == kAllocConfVariable; });
    again.variables.emplace_back(kAllocConfVariable, check.settings);
  }
  if (!config.folder.empty()) {
    again.folder = config.folder / folder;
    std::error_code ec;
    std::filesystem::create_directories(again.folder, ec);
    if (ec) again.folder.clear();
  }
  return again;
}

// Runs the program again with `check`'s setting and fills in how it ended.
void rerun(const ExecConfig& config, ExecDevices& devices, const RunResult& result,
           RemedyCheck& check) {
  take_rerun(run_exec(rerun_config(config, result, check), devices), check);
}

// Both reruns at once, on two GPUs: `cap`'s files in remedy_check_cap/ until the outcome says
// which of the two folders one after the other would have left as remedy_check/.
void rerun_both(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                const RunResult& result, RemedyCheck& first, RemedyCheck& cap) {
  const ExecConfig configs[] = {rerun_config(config, result, first),
                                rerun_config(config, result, cap, "remedy_check_cap")};
  std::optional<RunResult> runs[2];
  parallel_each(2, 2, [&](std::size_t i) { runs[i] = run_exec(configs[i], *gpus[i]); });
  take_rerun(*runs[0], first);
  take_rerun(*runs[1], cap);
  if (config.folder.empty()) return;
  std::error_code ec;
  if (first.held) {
    std::filesystem::remove_all(configs[1].folder, ec);
    return;
  }
  std::filesystem::remove_all(configs[0].folder, ec);
  std::filesystem::rename(configs[1].folder, configs[0].folder, ec);
}

// The PYTORCH_CUDA_ALLOC_CONF the program had (given to oomlab, or oomlab's own), which a
// setting's rerun replaces.
std::string given_alloc_conf(const ExecConfig& config) {
  const auto given = std::find_if(config.variables.begin(), config.variables.end(),
                                  [](const auto& v) { return v.first == kAllocConfVariable; });
  if (given != config.variables.end()) return given->second;
  // NOLINTNEXTLINE(concurrency-mt-unsafe): oomlab never changes its own environment
  const char* own = std::getenv(kAllocConfVariable);
  return own != nullptr ? own : "";
}

// A library beside the allocator ran out: the advised setting first (expandable segments), then
// PyTorch's allocator capped below the budget so that the library keeps room; the first that
// completes is the remedy, an earlier one that did not is a note.
void check_library_room(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                        RunResult& result) {
  ProgramModel& m = result.models.front();
  const std::uint64_t cap = library_room_cap(m.budget_bytes);
  const std::uint64_t total = result.device ? result.device->total_bytes : 0;
  RemedyCheck capped{
      .setting = "allocator cap",
      .allocator_cap_bytes = cap,
      .memory_fraction = total > 0 ? static_cast<double>(cap) / static_cast<double>(total) : 0.0};
  bool capped_ran = false;
  if (m.advised) {
    const ModelRow& row = m.whatif[*m.advised];
    RemedyCheck first{
        .setting = row.setting, .settings = row.settings, .replaced = given_alloc_conf(config)};
    if (gpus.size() >= 2) {
      rerun_both(config, gpus, result, first, capped);
      capped_ran = true;
    } else {
      rerun(config, *gpus.front(), result, first);
    }
    if (first.held) {
      m.remedy_check = std::move(first);
      return;
    }
    m.notes.push_back(fmt::format("--check-remedy tried first: {}", remedy_check_line(first)));
  }
  if (!capped_ran) rerun(config, *gpus.front(), result, capped);
  capped.summary = remedy_check_line(capped);
  if (capped.outcome == Outcome::oom && capped.line.find(" allowed;") != std::string::npos) {
    m.notes.push_back(fmt::format(
        "with {} given room, the program ran out in PyTorch's own allocator under its cap: the "
        "job needs more than this budget as it is, so the remedy is a smaller batch (or a "
        "larger card)",
        m.library_oom->library));
  }
  m.remedy_check = std::move(capped);
}

}  // namespace

std::string check_remedy(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                         RunResult& result) {
  if (std::string why = nothing_to_check(result); !why.empty()) return why;
  ProgramModel& m = result.models.front();
  if (m.library_oom) {
    check_library_room(config, gpus, result);
    return {};
  }
  ExecDevices& devices = *gpus.front();
  const ModelRow& row = m.whatif[*m.advised];
  RemedyCheck check{
      .setting = row.setting, .settings = row.settings, .replaced = given_alloc_conf(config)};
  rerun(config, devices, result, check);
  check.summary = remedy_check_line(check);
  m.remedy_check = std::move(check);
  return {};
}

std::string remedy_check_line(const RemedyCheck& c) {
  std::string set;
  if (c.allocator_cap_bytes) {
    set = fmt::format(
        "PyTorch's allocator capped at {} ({}={}, as "
        "torch.cuda.set_per_process_memory_fraction({:.4f}) does on this card)",
        format_bytes(*c.allocator_cap_bytes), kCapVariable, *c.allocator_cap_bytes,
        c.memory_fraction);
  } else {
    set = fmt::format(
        "{}={}{}", kAllocConfVariable, c.settings,
        c.replaced.empty() ? "" : fmt::format(" (replacing the program's '{}')", c.replaced));
  }
  return fmt::format("{} at the same budget: {}", set, remedy_verdict(c));
}

}  // namespace oomlab::torch
