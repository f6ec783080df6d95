#include "pytorch/exec/program_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "exec/oom_place.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "pytorch/exec/library_oom.hpp"
#include "pytorch/model/torch_options.hpp"
#include "pytorch/settings/torch_settings.hpp"
#include "pytorch/settings/whatif.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "trace/recorded_end.hpp"
#include "trace/trace.hpp"

namespace oomlab::torch {

namespace {

constexpr std::string_view kAsRecorded = "as recorded";

// The program's memory and PyTorch's reserved memory at one moment: the OOM (from PyTorch's own
// message when it states both, else NVML's sample then and the snapshot's segments) or the peak
// (NVML's highest sample and the snapshot's highest reserved).
struct ProcessMemory {
  std::uint64_t process = 0;
  std::uint64_t reserved = 0;
  std::string measured;
};

std::optional<ProcessMemory> from_message(const RunResult& run) {
  if (!run.oom || !run.oom->program) return std::nullopt;
  const ProgramMessage& m = *run.oom->program;
  if (!m.process_used_bytes || !m.framework_allocated_bytes || !m.framework_cached_free_bytes)
    return std::nullopt;
  const std::uint64_t reserved = *m.framework_allocated_bytes + *m.framework_cached_free_bytes;
  return ProcessMemory{
      .process = *m.process_used_bytes,
      .reserved = reserved,
      .measured = fmt::format(
          "at the OOM, from PyTorch's message: this process had {} in use, PyTorch {} allocated "
          "and {} reserved but unallocated (its figures are rounded to 2 decimals)",
          format_bytes(*m.process_used_bytes), format_bytes(*m.framework_allocated_bytes),
          format_bytes(*m.framework_cached_free_bytes))};
}

ProcessMemory measure(const RunResult& run, const trace::Trace& trace, bool holds_the_oom,
                      const SnapshotPlace& place) {
  const std::size_t processes = place.processes;
  const std::uint64_t peak_reserved_of_all = place.peak_reserved_of_all;
  if (holds_the_oom) {
    if (auto said = from_message(run)) return *said;
  }
  const ProgramRun& p = *run.program;
  const std::string nvml = p.usage_source == "device-free"
                               ? "the device's free memory (NVML could not tell its processes)"
                               : "NVML";
  const std::string shared =
      processes > 1 ? fmt::format(
                          " (NVML's figure is for all {} processes together: each is "
                          "given an equal share of what lies outside their allocators)",
                          processes)
                    : std::string();
  const std::uint32_t failed_at = trace::fatal_failure_at(trace);
  if (holds_the_oom && run.oom && failed_at != trace::Event::kNone) {
    return {.process = run.oom->live_bytes,
            .reserved = trace::recorded_reserved_before(trace, failed_at),
            .measured = fmt::format("at the OOM: the program's memory then ({}) less the "
                                    "snapshot's reserved memory before its OOM entry{}",
                                    nvml, shared)};
  }
  const std::uint64_t reserved = trace::recorded_peak_reserved(trace);
  const std::uint64_t others =
      peak_reserved_of_all > reserved ? peak_reserved_of_all - reserved : 0;
  const std::uint64_t whole = place.peak_bytes > others ? place.peak_bytes - others : 0;
  return {.process = processes > 1 ? reserved + (whole - std::min(whole, reserved)) / processes
                                   : place.peak_bytes,
          .reserved = reserved,
          .measured = fmt::format("at the peak: the program's highest sample ({}) less the most "
                                  "the snapshot's allocator reserved{}",
                                  nvml, shared)};
}

ModelRow model_row(const WhatIfRow& row, std::uint64_t outside) {
  ModelRow out;
  out.setting = row.setting;
  out.settings = row.settings;
  out.fraction_cap = row.fraction_cap;
  out.approximate = row.options.choice("backend") == "async";
  out.model_frontier_bytes = row.frontier_bytes;
  if (row.at_budget) {
    out.completes_at_budget = row.at_budget->outcome == Outcome::completed;
    out.first_failure_index = row.at_budget->first_failure_index;
  }
  if (row.frontier_bytes) out.frontier_bytes = *row.frontier_bytes + outside;
  return out;
}

std::string reproduction(const ProgramModel& m, Outcome program) {
  const auto entry = [](std::uint64_t e) { return format_count(e); };
  if (m.library_oom) return library_reproduction(*m.library_oom, m.budget_bytes);
  if (m.program_entry && m.reproduced_entry) {
    if (*m.program_entry == *m.reproduced_entry)
      return fmt::format("reproduced: the model fails at entry {}, where PyTorch did",
                         entry(*m.program_entry));
    return fmt::format("not reproduced: the model fails at entry {}, {} than PyTorch (entry {})",
                       entry(*m.reproduced_entry),
                       *m.reproduced_entry < *m.program_entry ? "earlier" : "later",
                       entry(*m.program_entry));
  }
  if (m.program_entry) {
    return fmt::format(
        "not reproduced: the model completes at this budget, where PyTorch failed at entry {}",
        entry(*m.program_entry));
  }
  if (m.reproduced_entry) {
    return fmt::format("not reproduced: the model fails at entry {}, where the program went on",
                       entry(*m.reproduced_entry));
  }
  if (program != Outcome::completed) {
    return fmt::format(
        "the model completes this snapshot at this budget; the program itself ended in {} "
        "without a refusal of this process's allocator",
        to_string(program));
  }
  return "reproduced: the model completes at this budget, as the program did";
}

// The advice: the settings other than the program's own (which failed for real) that the model
// shows completing, card settings only (a fraction cap is not what PYTORCH_CUDA_ALLOC_CONF gives).
void advise(ProgramModel& m) {
  std::vector<SettingAnswer> checks;
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < m.whatif.size(); ++i) {
    const ModelRow& r = m.whatif[i];
    if (r.as_ran || r.fraction_cap) continue;
    checks.push_back(static_cast<const SettingAnswer&>(r));  // the row's answer at the budget
    rows.push_back(i);
  }
  m.advice = remedy_advice(checks, m.budget_bytes);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i].completes_at_budget) {
      m.advised = rows[i];
      return;
    }
  }
}

void fill_rows(ProgramModel& m, const WhatIfResult& whatif) {
  const bool recorded_row =
      std::any_of(whatif.rows.begin(), whatif.rows.end(),
                  [](const WhatIfRow& r) { return r.setting == kAsRecorded; });
  for (const WhatIfRow& row : whatif.rows) {
    ModelRow r = model_row(row, m.outside_allocator_bytes);
    r.as_ran = row.setting == (recorded_row ? kAsRecorded : "native");
    if (r.as_ran && !r.completes_at_budget) m.reproduced_entry = r.first_failure_index;
    m.whatif.push_back(std::move(r));
  }
}

}  // namespace

ProgramModel model_snapshot(const RunResult& run, const std::filesystem::path& snapshot,
                            const std::shared_ptr<const trace::Trace>& trace, bool holds_the_oom,
                            const SnapshotPlace& place, const ModelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (trace->format != torch::pytorch_format()) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not a PyTorch memory snapshot", snapshot.string()));
  }
  ProgramModel m{.snapshot = snapshot};
  // A program that died in a CUDA library died beside the allocator: a refusal at the trace's
  // end was one it caught and survived, not its OOM.
  const bool in_library = holds_the_oom && run.oom && run.oom->program && run.oom->program->library;
  if (const std::uint32_t fatal = trace::fatal_failure_at(*trace);
      fatal != trace::Event::kNone && !in_library)
    m.program_entry = trace->events[fatal].index;
  const ProcessMemory memory = measure(run, *trace, holds_the_oom && m.program_entry, place);
  m.process_bytes = memory.process;
  m.allocator_reserved_bytes = memory.reserved;
  m.outside_allocator_bytes =
      memory.process > memory.reserved ? memory.process - memory.reserved : 0;
  m.outside_measured = memory.measured;
  if (memory.process < memory.reserved) {
    m.notes.push_back(fmt::format(
        "the program's memory ({}) read less than its allocator's reserved memory ({}): the "
        "samples missed the moment; nothing is counted outside the allocator",
        format_bytes(memory.process), format_bytes(memory.reserved)));
  }
  m.budget_bytes = place.budget_bytes > m.outside_allocator_bytes + kDevicePageBytes
                       ? place.budget_bytes - m.outside_allocator_bytes
                       : kDevicePageBytes;
  const WhatIfResult whatif = what_if(
      {.trace = snapshot,
       .loaded = trace,
       .device = place.device,
       .budget = BudgetRequest{.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{m.budget_bytes}},
       .stop = options.stop,
       .threads = options.threads});
  fill_rows(m, whatif);
  if (holds_the_oom && !m.program_entry && run.oom && run.oom->program)
    m.library_oom = library_oom(*trace, *run.oom->program);
  m.reproduction = reproduction(m, run.outcome);
  m.lower_bound = trace::stops_short(*trace) || m.library_oom.has_value();
  m.caveats = trace::trace_caveats(*trace);
  if (m.library_oom) {  // its own words, with the allocator's figures, for the record's
    if (trace->recorded_end)
      std::erase(m.caveats, trace::recorded_end_caveat(*trace->recorded_end));
    m.caveats.insert(m.caveats.begin(), library_caveat(*m.library_oom));
  }
  if (const RecordedSettings* recorded = trace::allocator_settings(*trace);
      recorded != nullptr && torch::ran_under_fraction_cap(*recorded)) {
    m.notes.emplace_back(
        "the program's own OOM left the device room for the request: it ran under "
        "torch.cuda.set_per_process_memory_fraction, whose cap is not the budget; the model "
        "answers for a card of the budget");
  }
  if (m.program_entry && holds_the_oom) advise(m);
  if (m.library_oom) advise_library_room(m);
  m.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

namespace {

// How the run ended, as its record will say: what a snapshot of it knows of its program.
trace::RecordedEnd run_end(const RunResult& run) {
  trace::RecordedEnd end{.outcome = std::string(to_string(run.outcome)),
                         .budget_bytes = run.budget_bytes};
  if (run.oom && run.oom->program) {
    end.reporter = run.oom->program->framework;
    end.library = run.oom->program->library;
    end.line = run.oom->program->line;
  } else {
    end.line = run.error_message;
  }
  return end;
}

// What choosing among a run's snapshots needs of each: read once, then let go.
struct SnapshotFacts {
  std::optional<std::uint64_t> failed_request_bytes;  // its first failed request
  std::uint64_t peak_reserved_bytes = 0;
  std::uint32_t device = 0;  // the device its history is of
};

// A device the snapshot holds no history of: its process ran on another one.
bool no_history_here(const Error& e) {
  const std::string_view what = e.what();
  return what.find(" is empty") != std::string_view::npos;
}

// The snapshot's history: each process records on its own device (rank 1 on cuda:1), so the
// devices are tried in turn up to the run's.
SnapshotFacts facts_of(const std::filesystem::path& snapshot, std::size_t devices) {
  for (std::uint32_t device = 0;; ++device) {
    try {
      const trace::Trace trace = trace::load(snapshot, {.device = device});
      SnapshotFacts f{.peak_reserved_bytes = trace::recorded_peak_reserved(trace),
                      .device = device};
      if (const std::uint32_t fatal = trace::fatal_failure_at(trace); fatal != trace::Event::kNone)
        f.failed_request_bytes = trace.events[fatal].bytes;
      return f;
    } catch (const Error& e) {
      if (!no_history_here(e) || device + 1 >= std::max<std::size_t>(devices, 1)) throw;
    }
  }
}

// Where snapshot `i` ran, and what the run saw on that device.
SnapshotPlace place_of(const RunResult& run, const std::vector<std::optional<SnapshotFacts>>& facts,
                       std::size_t i) {
  const ProgramRun& p = *run.program;
  const std::uint32_t device = facts[i]->device;
  SnapshotPlace place{.device = device,
                      .budget_bytes = run.budget_bytes,
                      .peak_bytes = p.peak_bytes,
                      .processes = 0};
  const bool several = p.device_runs.size() > 1;
  if (several && device < p.device_runs.size()) {
    place.budget_bytes = p.device_runs[device].budget_bytes;
    place.peak_bytes = p.device_runs[device].peak_bytes;
  }
  for (const auto& f : facts) {
    if (!f || (several && f->device != device)) continue;
    ++place.processes;
    place.peak_reserved_of_all += f->peak_reserved_bytes;
  }
  return place;
}

// PyTorch's message gives its request to 2 decimals of its unit.
bool same_request(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t most = std::max(a, b);
  return most - std::min(a, b) <= most / 100 + 1_MiB;
}

// The snapshot of the process whose OOM the program printed: its request is the message's, else
// the first whose trace holds an OOM.
std::optional<std::size_t> oom_snapshot(const RunResult& run,
                                        const std::vector<std::optional<SnapshotFacts>>& facts) {
  if (run.outcome != Outcome::oom) return std::nullopt;
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (!facts[i] || !facts[i]->failed_request_bytes) continue;
    if (!first) first = i;
    if (run.oom && run.oom->request_bytes != 0 &&
        same_request(*facts[i]->failed_request_bytes, run.oom->request_bytes))
      return i;
  }
  if (first || !run.oom || !run.oom->program) return first;
  // No allocator refused: the OOM was beside it, in the failing rank's process when known.
  const std::vector<std::filesystem::path>& files = run.program->snapshots;
  const ProgramRun& p = *run.program;
  for (std::size_t i = 0; i < files.size() && p.failing_rank; ++i) {
    if (facts[i] &&
        files[i].filename() == fmt::format("snapshot-rank{}.pickle", p.failing_rank->rank))
      return i;
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (facts[i]) return i;
  }
  return std::nullopt;
}

}  // namespace

void model_program(RunResult& run, const ModelOptions& options) {
  run.models.clear();
  if (run.program) run.program->model_notes.clear();
  if (!run.program || run.program->snapshots.empty() || run.outcome == Outcome::interrupted) return;
  const std::vector<std::filesystem::path>& snapshots = run.program->snapshots;
  std::vector<std::optional<SnapshotFacts>> facts(snapshots.size());
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    try {
      facts[i] = facts_of(snapshots[i], run.program->devices.size());
    } catch (const Error& e) {
      run.program->model_notes.push_back(
          fmt::format("the model skipped a snapshot it could not read: {}", e.what()));
    }
  }
  const std::optional<std::size_t> primary = oom_snapshot(run, facts);
  std::vector<std::size_t> order;
  if (primary) order.push_back(*primary);
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    if (facts[i] && i != primary) order.push_back(i);
  }
  try {
    for (const std::size_t i : order) {
      trace::Trace loaded = trace::load(snapshots[i], {.device = facts[i]->device});
      if (!loaded.recorded_end) loaded.recorded_end = run_end(run);  // the run is its record
      const auto trace = std::make_shared<const trace::Trace>(std::move(loaded));  // once
      ProgramModel m =
          model_snapshot(run, snapshots[i], trace, i == primary, place_of(run, facts, i), options);
      if (i == primary && run.oom) describe_failure(*run.oom, *trace, *run.program);
      if (run.program->devices.size() > 1 && facts[i]->device < run.program->devices.size())
        m.device = run.program->devices[facts[i]->device];
      run.models.push_back(std::move(m));
    }
  } catch (const Interrupted&) {
    run.program->model_notes.emplace_back(
        "the model was stopped before it answered for every snapshot");
  } catch (const Error& e) {
    run.program->model_notes.push_back(fmt::format("the model could not answer: {}", e.what()));
  }
  if (!run.models.empty() && primary && run.oom && !run.models.front().advice.empty())
    run.oom->diagnosis.advice = run.models.front().advice;
  if (!run.models.empty() && run.oom && run.models.front().library_oom) {
    run.oom->diagnosis.evidence =
        library_evidence(*run.models.front().library_oom, run.budget_bytes);
  }
}

}  // namespace oomlab::torch
