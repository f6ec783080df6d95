// --from NAME=V1,V2[,...] and --at NAME=N, and the series of snapshots they name: a --trace
// pattern with {NAME} where each file's value goes ('runs/snap_b{batch}.pickle').
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_series.hpp"

namespace oomlab::cli {

struct SeriesAsked {
  std::string name;
  std::vector<std::uint64_t> values;
};

// "batch=1,2": a name and two or more distinct whole numbers, each 1 or more. Error(usage) naming
// `flag`.
[[nodiscard]] SeriesAsked parse_series_values(const std::string& text, std::string_view flag);
// "batch=64": a name and one whole number of 1 or more. Error(usage) naming `flag`.
[[nodiscard]] std::pair<std::string, std::uint64_t> parse_series_value(const std::string& text,
                                                                       std::string_view flag);
// The pattern with {NAME} replaced by `value`.
[[nodiscard]] std::string series_path(const std::string& pattern, const std::string& name,
                                      std::uint64_t value);
// Each file read (trace::load: Error(input) naming the file), the series aligned; Error(usage)
// for a pattern without {NAME}, Error(input) for a missing file (naming it and its value).
// `device`: the device trace each is read at (LoadOptions: none, the one with a history).
[[nodiscard]] trace::TraceSeries load_series(const std::string& pattern, const SeriesAsked& asked,
                                             const trace::LoadOptions& device,
                                             const std::function<void()>& check_stop);
// What the series found, one line each: the values, the alignment, what does not follow a line.
// `rule`: how the transient requests were made, said when there are any (none: not said).
[[nodiscard]] std::vector<std::string> series_notes(
    const trace::TraceSeries& series, std::optional<trace::TraceSeries::Rule> rule = std::nullopt);

}  // namespace oomlab::cli
