#include "reports/run/program_devices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "exec/rank_attribution.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

const DeviceRun* headline_device(const ProgramRun& p) {
  const std::optional<std::size_t> at = failing_device(p);
  return at ? &p.device_runs[*at] : nullptr;
}

std::string headline_device_label(const ProgramRun& p, const DeviceRun& d) {
  if (p.failing_rank && p.failing_rank->device == d.index)
    return fmt::format("GPU {} (rank {} ran out)", d.index, p.failing_rank->rank);
  return fmt::format("GPU {} (the closest to its budget)", d.index);
}

std::string device_budgets_text(const ProgramRun& p) {
  std::vector<int> indices;
  std::vector<std::string> each;
  for (const DeviceRun& d : p.device_runs) {
    indices.push_back(d.index);
    each.push_back(fmt::format("{} on GPU {}", format_bytes(d.budget_bytes), d.index));
  }
  const bool same = std::all_of(p.device_runs.begin(), p.device_runs.end(), [&](const auto& d) {
    return d.budget_bytes == p.device_runs.front().budget_bytes;
  });
  if (!same) return fmt::format("{}", fmt::join(each, ", "));
  return fmt::format("{} on each of GPUs {}", format_bytes(p.device_runs.front().budget_bytes),
                     fmt::join(indices, ", "));
}

std::string device_figures(const DeviceRun& d) {
  const std::string share =
      d.budget_bytes == 0 ? std::string("no budget")
                          : fmt::format("{:.1f}% of it", 100.0 * static_cast<double>(d.peak_bytes) /
                                                             static_cast<double>(d.budget_bytes));
  return fmt::format("budget {} · peak {} ({}) · {} of it taken{}", format_bytes(d.budget_bytes),
                     format_bytes(d.peak_bytes), share, format_bytes(d.peak_used_bytes),
                     d.full_ms ? fmt::format(" · full at {:.2f} s", *d.full_ms / 1e3) : "");
}

std::string peak_of_budget(std::uint64_t peak, std::uint64_t budget) {
  if (budget == 0) return format_bytes(peak);
  return fmt::format("{} ({:.1f}% of its {} budget)", format_bytes(peak),
                     100.0 * static_cast<double>(peak) / static_cast<double>(budget),
                     format_bytes(budget));
}

std::vector<const ProgramModel*> models_in_order(const RunResult& r) {
  std::vector<const ProgramModel*> out;
  for (const ProgramModel& m : r.models)
    out.push_back(&m);
  const DeviceRun* device = r.program ? headline_device(*r.program) : nullptr;
  if (device == nullptr) return out;
  std::stable_partition(out.begin(), out.end(),
                        [&](const ProgramModel* m) { return m->device == device->index; });
  return out;
}

std::vector<const ProgramModel*> shown_models(const RunResult& r) {
  std::vector<const ProgramModel*> out = models_in_order(r);
  if (!r.program || r.program->device_runs.size() < 2)
    out.resize(std::min<std::size_t>(out.size(), 1));
  return out;
}

std::string model_device_prefix(const RunResult& r, const ProgramModel& m) {
  if (!r.program || r.program->device_runs.size() < 2 || !m.device) return "";
  return fmt::format("GPU {}: ", *m.device);
}

}  // namespace oomlab
