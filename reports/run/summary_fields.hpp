// What summary.json's writers and readers share (reports/summary_*.cpp): a file the run wrote
// named relative to its folder and back, a text written as null when empty, and an enum written
// by its name and read back by it.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/run/report_input.hpp"
#include "run/framework_model.hpp"

namespace oomlab {

// `file` relative to the run folder when it is in it, else as it is.
[[nodiscard]] std::string run_file(const std::filesystem::path& file,
                                   const std::filesystem::path& folder);
// The path a name run_file wrote stands for: relative names are in `folder`.
[[nodiscard]] std::filesystem::path from_run_file(const std::string& name,
                                                  const std::filesystem::path& folder);

[[nodiscard]] inline nlohmann::ordered_json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(text);
}

// What a summary's (or a program run's) "outcome" may be.
inline constexpr std::array kSummaryOutcomes = {Outcome::oom, Outcome::completed, Outcome::error,
                                                Outcome::interrupted, Outcome::timeout};

// The enum whose to_string is the field's text; Error(input) naming the field and the names it
// may be otherwise.
template <typename Enum, std::size_t N>
[[nodiscard]] Enum named(const JsonFields& fields, const std::string& key,
                         const std::array<Enum, N>& values) {
  const std::string text = fields.text(key);
  std::vector<std::string> names;
  for (const Enum value : values) {
    if (to_string(value) == text) return value;
    names.emplace_back(to_string(value));
  }
  fields.fail(key, fmt::format("one of {}, not '{}'", fmt::join(names, ", "), text));
}

}  // namespace oomlab
