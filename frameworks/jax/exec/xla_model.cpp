#include "jax/exec/xla_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "device/device.hpp"
#include "exec/exec_run.hpp"
#include "exec/oom_place.hpp"
#include "jax/exec/xla_program.hpp"
#include "jax/exec/xla_remat.hpp"
#include "jax/model/xla_backend.hpp"
#include "jax/trace/xla_dump.hpp"
#include "jax/trace/xla_log.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "run/fit.hpp"
#include "run/frontier.hpp"
#include "trace/trace.hpp"

namespace oomlab::jax {

namespace {

// One of JAX's settings as the model asks it: its name, what to set, the backend's options.
struct XlaSetting {
  std::string name;
  std::string variable;  // "" for JAX's defaults
  std::string value;
  Params options;
};

const BackendInfo& xla_info() {
  const BackendInfo* info = find_backend(kBackendName);
  if (info == nullptr) throw Error(ErrorKind::internal, "no backend 'xla' in the catalogue");
  return *info;
}

// The pool's share of the card the program ran with: the log's limit over the card (JAX's 0.75
// unless the program set its own), JAX's default where the log does not say.
double pool_fraction(const trace::Trace& trace, std::uint64_t card_bytes) {
  const RecordedSettings* recorded = trace::allocator_settings(trace);
  const std::optional<Bytes> limit =
      recorded != nullptr ? recorded->get<Bytes>("limit") : std::nullopt;
  if (!limit || card_bytes == 0) return 0.75;
  return std::clamp(static_cast<double>(limit->value) / static_cast<double>(card_bytes), 0.01, 1.0);
}

// The largest share of the card, in hundredths, that leaves what the process held beside the pool
// and 2% of the card more (what it holds beside the pool was sampled, not every byte of it seen),
// where that is more than the pool had.
std::optional<double> larger_share(double fraction, std::uint64_t card, std::uint64_t outside) {
  if (card == 0 || outside == 0 || outside >= card) return std::nullopt;  // 0: not measured
  const double room = static_cast<double>(card - outside) / static_cast<double>(card) - 0.02;
  const double share = std::floor(room * 100.0) / 100.0;
  if (share < fraction + 0.01) return std::nullopt;
  return std::min(share, 1.0);
}

// JAX's defaults, preallocation off, the platform allocator, a larger share of the card for the
// pool (where the process leaves room for one): the pool's share as the run had it, and what the
// process held beside it.
std::vector<XlaSetting> xla_settings(double fraction, std::uint64_t outside, std::uint64_t card,
                                     bool grown) {
  const auto with = [&](const std::vector<std::pair<std::string, ParamValue>>& set) {
    Params p(xla_info().options);
    p.set("fraction", fraction);
    p.set("outside", Bytes{outside});
    for (const auto& [name, value] : set)
      p.set(name, value);
    return p;
  };
  std::vector<XlaSetting> settings = {
      {.name = "JAX's defaults", .options = with({{"preallocate", true}})},
      {.name = "preallocate=false",
       .variable = "XLA_PYTHON_CLIENT_PREALLOCATE",
       .value = "false",
       .options = with({{"preallocate", false}})},
      {.name = "allocator=platform",
       .variable = "XLA_PYTHON_CLIENT_ALLOCATOR",
       .value = "platform",
       .options = with({{"allocator", std::string("platform")}})},
  };
  if (const std::optional<double> share = larger_share(fraction, card, outside)) {
    const std::string value = fmt::format("{:.2f}", *share);
    settings.push_back({.name = "mem_fraction=" + value,
                        .variable = "XLA_PYTHON_CLIENT_MEM_FRACTION",
                        .value = value,
                        .options = with({{"preallocate", !grown}, {"fraction", *share}})});
  }
  return settings;
}

// A replay of the log on the model: the registry's trace player on `xla` over the sim.
RunConfig replay_config(const std::shared_ptr<const trace::Trace>& trace,
                        const std::atomic<bool>* stop) {
  const Registry::Entry* player = Registry::global().trace_player();
  if (player == nullptr) throw Error(ErrorKind::internal, "no scenario replays traces");
  RunConfig config;
  config.trace = trace;
  config.params = Params(player->params);
  config.params.set("trace", trace->source.string());
  config.allocator = xla_info().kind;
  config.probe = false;
  config.verify = VerifyMode::off;
  config.environment = probe_host_environment();
  config.stop = stop;
  return config;
}

RunResult replay_at(RunConfig config, const Params& options, std::uint64_t card) {
  config.allocator_options = options;
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{card}};
  RunResult r = run_scenario(config);
  if (r.outcome == Outcome::interrupted) throw Interrupted();
  if (r.outcome == Outcome::error) {
    throw Error(ErrorKind::device, fmt::format("the replay on a card of {} ended in error: {}",
                                               format_bytes(card), r.error_message));
  }
  return r;
}

// The setting at the run's card, and the smallest card for the whole process under it (the
// model's frontier there less what the process held beside the pool).
ModelRow setting_row(const RunConfig& base, const XlaSetting& s, std::uint64_t card,
                     std::uint64_t upper, std::uint64_t outside) {
  ModelRow row;
  row.setting = s.name;
  // No pool: XLA is given no limit to compile the step under, and compiles it for the device.
  row.approximate = s.options.choice("allocator") == "platform";
  row.settings = s.variable.empty() ? "" : s.variable + "=" + s.value;
  const RunResult at = replay_at(base, s.options, card);
  row.completes_at_budget = at.outcome == Outcome::completed;
  if (at.oom) row.first_failure_index = at.oom->trace_entry;
  RunConfig search = base;
  search.allocator_options = s.options;
  search.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{upper}};
  const FrontierResult f = find_frontier(search, kDevicePageBytes, nullptr);
  if (f.answer) {
    row.frontier_bytes = *f.answer;
    row.model_frontier_bytes = *f.answer > outside ? *f.answer - outside : 0;
  }
  return row;
}

std::string reproduction(const ProgramModel& m, Outcome program) {
  if (m.program_entry && m.reproduced_entry) {
    if (*m.program_entry == *m.reproduced_entry)
      return fmt::format("reproduced: the model fails at entry {}, where XLA's pool did",
                         format_count(*m.program_entry));
    return fmt::format("not reproduced: the model fails at entry {}, {} than XLA's pool (entry {})",
                       format_count(*m.reproduced_entry),
                       *m.reproduced_entry < *m.program_entry ? "earlier" : "later",
                       format_count(*m.program_entry));
  }
  if (m.program_entry)
    return fmt::format(
        "not reproduced: the model completes on this card, where XLA's pool failed "
        "at entry {}",
        format_count(*m.program_entry));
  if (m.reproduced_entry)
    return fmt::format("not reproduced: the model fails at entry {}, where the program went on",
                       format_count(*m.reproduced_entry));
  if (program != Outcome::completed) {
    return fmt::format(
        "the model completes this log on this card; the program ended in {} with no failed "
        "request of the pool's in the log that it did not survive",
        to_string(program));
  }
  return "reproduced: the model completes on this card, as the program did";
}

// The first setting other than the one the program ran with that the model shows completing.
void advise(ProgramModel& m, std::uint64_t card) {
  for (std::size_t i = 0; i < m.whatif.size(); ++i) {
    const ModelRow& r = m.whatif[i];
    if (r.as_ran || r.approximate || r.settings.empty() || !r.completes_at_budget) continue;
    m.advised = i;
    m.advice = fmt::format(
        "{}: the model of XLA's allocator completes this program's step with it on a card of {} "
        "(exec --check-remedy reruns the program with it)",
        r.settings, format_bytes(card));
    return;
  }
  m.advice = fmt::format(
      "none of JAX's allocator settings completes this step on a card of {} in the model: reduce "
      "the batch, or rematerialise (jax.checkpoint)",
      format_bytes(card));
}

// What the process held beside the pool: its highest sample less the regions the pool took, as
// its log recorded them (regions are never given back: what it took by the end), or where the
// log has none, the most the model's pool takes (the whole limit when preallocated, the regions
// grown otherwise). The log's are the pool's where a card too small for its limit gave less.
std::uint64_t outside_of(const RunResult& run, const RunConfig& base, const Params& as_ran,
                         const trace::Trace& trace, ProgramModel& m) {
  const RecordedSettings* recorded = trace::allocator_settings(trace);
  const std::optional<Bytes> regions =
      recorded != nullptr ? recorded->get<Bytes>("regions") : std::nullopt;
  std::uint64_t pool = 0;
  if (regions) {
    pool = regions->value;
  } else {
    Params bare = as_ran;
    bare.set("outside", Bytes{0});
    pool = replay_at(base, bare, run.budget_bytes).peak_reserved_bytes;
  }
  m.process_bytes = run.program->peak_bytes;
  m.allocator_reserved_bytes = pool;
  m.outside_measured =
      fmt::format("at the peak: the program's highest sample ({}) less XLA's pool {} ({})",
                  run.program->usage_source == "device-free" ? "the device's free memory" : "NVML",
                  regions ? "as its log records its regions" : "as the model holds it then",
                  format_bytes(pool));
  return m.process_bytes > m.allocator_reserved_bytes ? m.process_bytes - m.allocator_reserved_bytes
                                                      : 0;
}

// "[executable_name='jit_train_step']" in XLA's message: the step that asked.
std::string executable_of(const OomRecord& oom) {
  constexpr std::string_view kKey = "executable_name='";
  if (!oom.program) return {};
  const std::string& line = oom.program->line;
  const std::size_t at = line.find(kKey);
  if (at == std::string::npos) return {};
  const std::size_t end = line.find('\'', at + kKey.size());
  return end == std::string::npos ? std::string{}
                                  : line.substr(at + kKey.size(), end - at - kKey.size());
}

// A note of the model's where there is one (a remodel makes it again), else of the run's.
void note(RunResult& run, std::string text) {
  (run.models.empty() ? run.notes : run.models.front().notes).push_back(std::move(text));
}

// The step whose temp buffer the pool refused, from XLA's dump beside the log: what its buffers
// hold at its peak (the OOM's holders, by the program's lines) and where the program called it
// when it was traced (JAX's dispatch is asynchronous: its traceback names where a result was
// next read). The dump is left holding that step's files alone (none: no trace, no such step).
// Whether the dump held that step.
bool describe_step(RunResult& run, const trace::Trace* trace, const std::filesystem::path& dump) {
  constexpr std::size_t kHolders = 10;
  std::error_code ec;
  if (!std::filesystem::is_directory(dump, ec)) return false;
  const std::uint32_t fatal =
      trace != nullptr ? trace::fatal_failure_at(*trace) : trace::Event::kNone;
  std::optional<CompiledStep> step;
  if (run.oom && fatal != trace::Event::kNone)
    step = compiled_step(dump, trace->events[fatal].bytes, executable_of(*run.oom), kHolders);
  keep_in_dump(dump, step ? &*step : nullptr);
  if (!step) return false;
  OomRecord& oom = *run.oom;
  oom.holders = step->holders;
  note(run, fmt::format("the step {} asked XLA's pool for its temp buffer, {}; at its peak its "
                        "buffers, with its arguments, hold {} (XLA's dump of it: {})",
                        step->name, format_bytes(step->temp_bytes), format_bytes(step->peak_bytes),
                        step->hlo.string()));
  if (step->call_frames.empty() || !run.program) return true;
  const OomRecord before = oom;
  oom.frames = step->call_frames;
  oom.frames_from = "compiled";
  choose_user_frame(oom, *run.program);
  if (oom.user_frame.empty()) {  // none of the program's own: the traceback's place stands
    oom = before;
    return true;
  }
  if (!before.user_frame.empty() && before.user_frame != oom.user_frame) {
    note(run, fmt::format("JAX raised the OOM at {}, where the program next read a result: it "
                          "runs a step asynchronously; the step that asked was traced (first "
                          "called) at {}",
                          before.user_frame, oom.user_frame));
  }
  return true;
}

// What XLA's rematerialisation said of the step the pool refused (the dump's step, whose temp
// was the refused request), where it could not bring the step under what it aimed at: its
// warning on the program's stderr, beside the log, whose estimate holds the refused temp.
void describe_compile(RunResult& run, const trace::Trace& trace, const std::filesystem::path& dir) {
  if (!run.program || run.program->stderr_file.empty()) return;
  const std::uint64_t temp = trace.events[trace::fatal_failure_at(trace)].bytes;
  const std::optional<RematShortfall> r = remat_shortfall(dir / run.program->stderr_file, temp);
  if (!r || r->reduced_bytes < temp) return;
  note(run, fmt::format("XLA's rematerialisation could not bring the step under the {} it aimed "
                        "at (the pool's limit less the step's inputs and outputs, times XLA's "
                        "slop factor): by XLA's own estimate the step still needs {} ({} before "
                        "rematerialising; {} line {}); a smaller batch, jax.checkpoint or a "
                        "larger pool",
                        format_bytes(r->target_bytes), format_bytes(r->reduced_bytes),
                        format_bytes(r->original_bytes), run.program->stderr_file, r->line));
}

// An OOM raised while XLA compiled the step (its autotuner refused the memory to time every
// candidate of some instructions: "Failed to get configs for: 8 out of 41 instructions"), said
// in the cause: the step never ran, and the buffers the autotuner asked for are the step's own.
constexpr std::string_view kCompileOom = "Failed to get configs for: ";

bool compile_oom(const RunResult& run) {
  return run.oom && run.oom->program &&
         run.oom->program->line.find(kCompileOom) != std::string::npos;
}

void note_compile_oom(RunResult& run) {
  if (!compile_oom(run)) return;
  const std::string& line = run.oom->program->line;
  const std::size_t at = line.find(kCompileOom);
  const std::size_t end = line.find(" instructions", at);
  const std::string count = end == std::string::npos ? "some"
                                                     : line.substr(at + kCompileOom.size(),
                                                                   end - at - kCompileOom.size());
  std::string& evidence = run.oom->diagnosis.evidence;
  if (evidence.find("while XLA compiled the step") != std::string::npos) return;  // a remodel
  evidence += fmt::format(
      "; while XLA compiled the step, not while it ran: its autotuner was refused the memory "
      "to time any candidate of {} instructions (the buffers it times them with are the "
      "step's own)",
      count);
}

ProgramModel model_log(const RunResult& run, const std::shared_ptr<const trace::Trace>& trace,
                       const std::atomic<bool>* stop) {
  const auto start = std::chrono::steady_clock::now();
  ProgramModel m{.snapshot = trace->source, .owner = "XLA"};
  if (const std::uint32_t fatal = trace::fatal_failure_at(*trace); fatal != trace::Event::kNone)
    m.program_entry = trace->events[fatal].index;
  const RunConfig base = replay_config(trace, stop);
  const RecordedSettings* recorded = trace::allocator_settings(*trace);
  const bool grown = recorded != nullptr && recorded->get<bool>("preallocate") == false;
  const double fraction = pool_fraction(*trace, run.budget_bytes);
  std::vector<XlaSetting> settings = xla_settings(fraction, 0, 0, grown);
  const std::size_t ran = grown ? 1 : 0;
  m.outside_allocator_bytes = outside_of(run, base, settings[ran].options, *trace, m);
  // The pool's room: the card less what lay beside it (its limit is still its share of the card).
  m.budget_bytes = run.budget_bytes > m.outside_allocator_bytes
                       ? run.budget_bytes - m.outside_allocator_bytes
                       : 0;
  settings = xla_settings(fraction, m.outside_allocator_bytes, run.budget_bytes, grown);
  const std::uint64_t upper =
      std::max(run.budget_bytes, run.device ? run.device->total_bytes : run.budget_bytes);
  for (std::size_t i = 0; i < settings.size(); ++i) {
    ModelRow row =
        setting_row(base, settings[i], run.budget_bytes, upper, m.outside_allocator_bytes);
    row.as_ran = i == ran;
    // A program that grew its pool gets JAX's defaults back only by saying so.
    if (grown && i == 0) row.settings = "XLA_PYTHON_CLIENT_PREALLOCATE=true";
    if (row.as_ran && !row.completes_at_budget) m.reproduced_entry = row.first_failure_index;
    m.whatif.push_back(std::move(row));
  }
  m.reproduction = reproduction(m, run.outcome);
  m.lower_bound = trace::stops_short(*trace);
  m.caveats = trace::trace_caveats(*trace);
  m.caveats.emplace_back(
      "XLA compiles the program's step for the pool it is given: on a smaller card it may "
      "schedule the step in less memory than this log holds, so a frontier under this card is "
      "the most this step needs, not the least the program could");
  m.notes.emplace_back(
      "allocator=platform: with no pool XLA compiles the step for the whole device, not for the "
      "card (measured on an H200: a rerun of a program whose pool asked 5.00 GiB for its step "
      "asked 8.00 GiB), so its row replays the step as this log holds it, approximately, and is "
      "never the advice");
  if (m.program_entry) advise(m, run.budget_bytes);
  m.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace

void model_xla_run(RunResult& run, const std::atomic<bool>* stop) {
  run.models.clear();
  note_compile_oom(run);
  if (!run.program || run.program->snapshots.empty()) return;
  run.program->model_notes.clear();
  const std::filesystem::path log = run.program->snapshots.front();
  std::shared_ptr<const trace::Trace> trace;
  try {
    if (run.outcome == Outcome::interrupted) throw Interrupted();
    // A compile that failed after its autotuner's refusals died of the one its message names.
    const std::optional<std::uint64_t> died = compile_oom(run) && run.oom->request_bytes != 0
                                                  ? std::optional(run.oom->request_bytes)
                                                  : std::nullopt;
    trace = std::make_shared<const trace::Trace>(trace::load(
        log, {.device = 0, .completed = run.outcome == Outcome::completed, .died_asking = died}));
    if (trace::to_string(trace->format) != kXlaFormatName)
      throw Error(ErrorKind::input, fmt::format("{}: not XLA's allocator log", log.string()));
    run.models.push_back(model_log(run, trace, stop));
  } catch (const Interrupted&) {
    if (run.outcome != Outcome::interrupted) {
      run.program->model_notes.emplace_back(
          "the model was stopped before it answered for XLA's allocator log");
    }
  } catch (const Error& e) {
    run.program->model_notes.push_back(fmt::format("the model could not answer: {}", e.what()));
  }
  if (describe_step(run, trace.get(), log.parent_path() / kDumpFolder))
    describe_compile(run, *trace, log.parent_path());
  if (!run.models.empty() && run.oom && run.models.front().program_entry &&
      !run.models.front().advice.empty())
    run.oom->diagnosis.advice = run.models.front().advice;
}

}  // namespace oomlab::jax
