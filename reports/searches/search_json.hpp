// The searches' JSON, one writer for each schema: oomlab.frontier.v1 (`frontier` of a scenario or
// a replay, `frontier exec` of a program) and oomlab.fit.v1 (`fit`, `fit exec`). Field names are
// a contract other tools read: fields may be added, never renamed or removed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/params.hpp"
#include "run/boundary_search.hpp"
#include "run/fit.hpp"

namespace oomlab {

// What a search ran: a scenario (its parameters, seed and allocator) or a program (its command).
struct SearchSubject {
  std::string scenario;  // "exec" for a program
  Params params;
  std::uint64_t seed = 0;
  std::vector<std::string> command;  // a program's words; empty for a scenario
  std::string allocator;
  BackendKind backend = BackendKind::automatic;  // `allocator`, typed (automatic: a program's)
  Params allocator_options;
  bool simulated = false;
  bool lower_bound = false;  // a replay whose trace stops at the program's OOM
  std::optional<Environment> environment;
  std::optional<DeviceFacts> device;
  const ProgramRun* program = nullptr;  // the first run's, for a program
  const ProgramModel* model = nullptr;  // the model of the first run's snapshot, when there is one
  // What the driver keeps back of the device when idle: named cards are compared net of it.
  std::uint64_t kept_back_bytes = 0;
};

// The names of the cards (device/cards.hpp) whose budget holds `bytes`, smallest first.
// A search's answer made from a program's trace series: the values it was made from and how well
// their requests align (the "made_from" object); with the files read and how the transient
// requests were made ("transients"), when known.
[[nodiscard]] nlohmann::ordered_json made_from_json(
    const std::string& name, const std::vector<std::uint64_t>& values, const trace::SeriesFit& fit,
    const std::vector<std::filesystem::path>& files = {},
    std::optional<trace::TraceSeries::Rule> rule = std::nullopt);
[[nodiscard]] std::vector<std::string> card_names_holding(std::uint64_t bytes,
                                                          std::uint64_t kept_back);

// oomlab.frontier.v1: `frontier_bytes` the answer, `failing_bytes` the largest budget that failed;
// `answer` the line the command printed (what `oomlab report` of the folder leads with).
[[nodiscard]] nlohmann::ordered_json frontier_json(const SearchSubject& subject,
                                                   const BoundaryResult& result,
                                                   std::uint64_t resolution_bytes,
                                                   const std::string& answer);

// oomlab.fit.v1: `value` the largest value that completes, `runs`, `budget_bytes`, `trials`
// (value, outcome, peak, seconds), `predicted` (null without a model).
[[nodiscard]] nlohmann::ordered_json fit_json(const SearchSubject& subject, const FitResult& result,
                                              const std::string& answer);

}  // namespace oomlab
