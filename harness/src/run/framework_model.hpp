// What a framework's model of its allocator answers, in the framework's own settings: a setting
// and what it does at a budget (SettingAnswer, each row a model gives: an OOM's remedies, exec's
// ModelRow, a wing's what-if and card tables build on AllocatorSetting), and what the model said
// of the snapshots of a program `exec` ran (ProgramModel: its rows, the library the program died
// in, the remedy checked by a rerun). No framework's field: what to set is spelled in the
// framework's settings variable (CacheWords::settings_variable), and the framework fills these
// through its ProgramModelling (oomlab/framework.hpp). Part of RunResult (run/run_result.hpp);
// summary.json's "models" and "oom.remedies", whose keys stay as they were first written
// ("alloc_conf" for `settings`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab {

enum class Outcome : std::uint8_t { oom, completed, error, interrupted, timeout };
[[nodiscard]] std::string_view to_string(Outcome outcome);

// One setting of a framework's allocator, as every answer of its model names it.
struct AllocatorSetting {
  std::string setting;   // "native", "expandable_segments", "max_split_size=128MiB", "as recorded"
  std::string settings;  // what to set, in the framework's variable ("" for its defaults)
  bool fraction_cap = false;  // asked under a fraction cap of the framework's own (not a card)
  bool approximate = false;   // a model from measurements, not byte-exact (a driver's pool)
  bool operator==(const AllocatorSetting&) const = default;
};

// A setting and what it does at a budget: whether the whole trace (or snapshot) completes with
// it, and where it fails instead. An OOM's remedies (a replay on a framework's model that ran out
// of memory: its advice names only these), and each row of exec's model of a program.
struct SettingAnswer : AllocatorSetting {
  bool completes_at_budget = false;
  std::optional<std::uint64_t> first_failure_index;  // where it failed instead
  bool operator==(const SettingAnswer&) const = default;
};

// One setting on an exec'd program's snapshot: its answer at the run's budget less the memory
// the process held outside the allocator (the model's budget), and its frontiers.
struct ModelRow : SettingAnswer {
  bool as_ran = false;                                // the settings the program ran with
  std::optional<std::uint64_t> model_frontier_bytes;  // the smallest budget of the allocator
  std::optional<std::uint64_t> frontier_bytes;        // the smallest card for the whole process
  bool operator==(const ModelRow&) const = default;
};

// `exec --check-remedy`: the program run again at the same budget with the setting the model
// named, and whether the model's claim (it completes) held.
struct RemedyCheck {
  std::string setting;
  std::string settings;  // the framework's settings variable as set for the rerun (all of it)
  std::string replaced;  // the value of that variable oomlab was given, replaced ("" none)
  // The framework's allocator capped for the rerun, to leave a library beside it room: the cap,
  // and the fraction of the card the framework's own cap is set to for it (none: no cap).
  std::optional<std::uint64_t> allocator_cap_bytes;
  double memory_fraction = 0.0;
  Outcome outcome = Outcome::completed;
  bool held = false;
  std::string line;  // its OOM line, or why it failed otherwise
  double duration_ms = 0.0;
  std::string summary;  // the whole check in one line, as the framework words it
  bool operator==(const RemedyCheck&) const = default;
};

// The program ran out of memory in a library beside the framework's allocator (cuBLAS, cuDNN,
// NCCL, a CUDA call of the framework's own): its snapshot holds no refusal, and stops where the
// program died.
struct LibraryOom {
  std::string library;                  // "cuBLAS", "cuDNN", "NCCL", "CUDA", ...
  std::uint64_t entry = 0;              // the trace entry of the allocator's last allocation
  std::uint64_t allocated_bytes = 0;    // the allocator's blocks in use then
  std::uint64_t cached_free_bytes = 0;  // reserved by the allocator but unallocated then
  bool operator==(const LibraryOom&) const = default;
};

// What the model of a framework's allocator says of one snapshot an exec'd program wrote: whether
// it fails where the program did, what the program held outside the allocator, and each setting.
struct ProgramModel {
  std::filesystem::path snapshot;
  // Whose allocator the model is of ("XLA"), where it is not the snapshots' framework's
  // (Registry::snapshot_words): its rows' settings are then whole assignments ("VAR=value").
  std::string owner;
  std::optional<int> device;  // oomlab's index of the device its process ran on (several only)
  std::optional<std::uint64_t> program_entry;     // the trace entry of the program's own OOM
  std::optional<std::uint64_t> reproduced_entry;  // where the model failed; none: it completed
  std::optional<LibraryOom> library_oom;          // the program died beside the allocator
  std::uint64_t outside_allocator_bytes = 0;
  std::uint64_t process_bytes = 0;             // the program's memory then (NVML or its message)
  std::uint64_t allocator_reserved_bytes = 0;  // the allocator's reserved memory at that moment
  std::string outside_measured;                // when and from what, in words
  std::uint64_t budget_bytes = 0;              // the model's: the run's less the outside
  std::vector<ModelRow> whatif;
  std::string reproduction;  // "reproduced: the model fails at entry 8,945, where PyTorch did"
  std::string advice;
  std::optional<std::size_t> advised;  // the row the advice names
  bool lower_bound = false;            // the snapshot stops at the program's OOM
  std::vector<std::string> caveats;    // what the trace cannot know (trace_caveats)
  std::vector<std::string> notes;
  std::optional<RemedyCheck> remedy_check;
  double duration_ms = 0.0;
  [[nodiscard]] bool reproduced() const {
    return !library_oom && program_entry == reproduced_entry;
  }
  bool operator==(const ProgramModel&) const = default;
};

}  // namespace oomlab
