// exec --check-remedy for a JAX program (its rerun with the setting the model of XLA's allocator
// named), and the searches' predictions from two runs' logs of XLA's allocator.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "allocators/backends.hpp"
#include "device/device.hpp"
#include "exec/exec_run.hpp"
#include "jax/exec/xla_model.hpp"
#include "jax/model/xla_backend.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "run/fit.hpp"
#include "run/frontier.hpp"
#include "run/remedy_rerun.hpp"

namespace oomlab::jax {

namespace {

// Why the run has nothing to check, or "".
std::string nothing_to_check(const RunResult& run) {
  if (run.outcome != Outcome::oom) return "the program did not run out of memory";
  if (run.models.empty()) return "the program left no log of XLA's allocator for the model";
  const ProgramModel& m = run.models.front();
  if (!m.program_entry) return "XLA's allocator log holds no OOM of the program's";
  if (!m.advised || m.whatif[*m.advised].settings.find('=') == std::string::npos)
    return "the model names no setting that completes on this card";
  return {};
}

// The same program on the same card with the row's variable set over any value it had.
ExecConfig rerun_config(const ExecConfig& config, const RunResult& run, const ModelRow& row) {
  ExecConfig again = config;
  again.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{run.budget_bytes}};
  again.out_fd = -1;  // its output is in its files, not on the screen a second time
  again.err_fd = -1;
  again.notice = nullptr;
  again.snapshot.enabled = false;
  const std::size_t eq = row.settings.find('=');
  const std::string name = row.settings.substr(0, eq);
  std::erase_if(again.variables, [&](const auto& v) { return v.first == name; });
  again.variables.emplace_back(name, row.settings.substr(eq + 1));
  if (!config.folder.empty()) {
    again.folder = config.folder / "remedy_check";
    std::error_code ec;
    std::filesystem::create_directories(again.folder, ec);
    if (ec) again.folder.clear();
  }
  return again;
}

// The rows' replay: the registry's trace player on `xla` over the sim, the series' trace at a
// value made per trial.
RunConfig series_config(const SeriesQuestion& q) {
  const Registry::Entry* player = Registry::global().trace_player();
  const BackendInfo* xla = find_backend(kBackendName);
  if (player == nullptr || xla == nullptr)
    throw Error(ErrorKind::internal, "no trace player or no backend 'xla'");
  RunConfig config;
  config.params = Params(player->params);
  config.params.set("trace", q.series.points().back().trace->source.string());
  config.allocator = xla->kind;
  // The anchor's settings (preallocated or grown, the pool's share) as its run had them.
  Params options(xla->options);
  const RecordedSettings* recorded = trace::allocator_settings(*q.series.points().back().trace);
  if (recorded != nullptr) {
    if (const auto preallocate = recorded->get<bool>("preallocate"))
      options.set("preallocate", *preallocate);
    const std::uint64_t card = q.budget_bytes + q.outside_bytes;
    if (const auto limit = recorded->get<Bytes>("limit"); limit && card > 0)
      options.set(
          "fraction",
          std::clamp(static_cast<double>(limit->value) / static_cast<double>(card), 0.01, 1.0));
  }
  options.set("outside", Bytes{q.outside_bytes});
  config.allocator_options = std::move(options);
  config.probe = false;
  config.verify = VerifyMode::off;
  config.environment = probe_host_environment();
  config.stop = q.stop;
  return config;
}

}  // namespace

std::string check_xla_remedy(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                             RunResult& run) {
  if (std::string why = nothing_to_check(run); !why.empty()) return why;
  ProgramModel& m = run.models.front();
  const ModelRow& row = m.whatif[*m.advised];
  RemedyCheck check{.setting = row.setting, .settings = row.settings};
  const RunResult again = run_exec(rerun_config(config, run, row), *gpus.front());
  take_rerun(again, check);
  check.summary = xla_remedy_line(check);
  m.remedy_check = std::move(check);
  return {};
}

std::string xla_remedy_line(const RemedyCheck& c) {
  return fmt::format("{} on the same card: {}", c.settings, remedy_verdict(c));
}

// The budget the harness gives is the card less what the process held beside the pool: the
// card is that and the outside, the pool's limit its share of the card. A pool grown region by
// region keeps every region its compiler's threads made (each counts against the limit, none
// merges with another), and at a larger value the autotuner asks more of it than the runs did:
// the answer then says it may be over (docs/jax.md: the MLP-Mixer's 175 where 160 fails).
FitResult fit_xla_series(const SeriesQuestion& q) {
  RunConfig config = series_config(q);
  config.budget = {.kind = BudgetRequest::Kind::bytes,
                   .bytes = Bytes{q.budget_bytes + q.outside_bytes}};
  FitResult f = fit_series(config, q.series, {.range = q.range}, q.rule);
  const RecordedSettings* recorded = trace::allocator_settings(*q.series.points().back().trace);
  const bool grown = recorded != nullptr && recorded->get<bool>("preallocate") == false;
  if (grown && q.series.fit().side > 0 && f.answer) {
    std::vector<std::uint64_t> values;
    for (const trace::SeriesPoint& p : q.series.points())
      values.push_back(p.value);
    f.prediction_note = fmt::format(
        "it may be over: XLA's pool grows region by region here, and at larger values its "
        "compiler's threads (the autotuner's candidates) may make regions the runs at {} did not, "
        "each kept against the pool's limit",
        fmt::join(values, " and "));
  }
  return f;
}

std::optional<std::uint64_t> frontier_xla_series(const SeriesQuestion& q) {
  RunConfig config = series_config(q);
  config.trace = std::make_shared<const trace::Trace>(q.series.at(q.range.lo, q.rule));
  config.budget = {.kind = BudgetRequest::Kind::bytes,
                   .bytes = Bytes{q.budget_bytes + q.outside_bytes}};
  const FrontierResult f = find_frontier(config, kDevicePageBytes, nullptr);
  if (!f.answer) return std::nullopt;
  return *f.answer > q.outside_bytes ? *f.answer - q.outside_bytes : 0;
}

}  // namespace oomlab::jax
