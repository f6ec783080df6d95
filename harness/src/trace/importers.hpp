// The engine's importers behind trace::load() (a framework's are in its folder); and the field
// readers they share, each of which throws Error(input) naming the place ("file:line: ...").
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

#include "trace/stop_poll.hpp"
#include "trace/trace.hpp"

namespace oomlab::trace {

// Each calls `poll` as it reads (StopPoll): what stops a long load.
[[nodiscard]] Trace load_oomlab_csv(const std::filesystem::path& path, StopPoll poll = {});
[[nodiscard]] Trace load_rmm_csv(const std::filesystem::path& path, StopPoll poll = {});

// The same from text already in memory (`path` for messages): what the fuzzers drive. The CSVs
// may have a UTF-8 byte-order mark, CRLF line ends and blank lines.
[[nodiscard]] Trace parse_oomlab_csv(const std::filesystem::path& path, std::istream& in,
                                     StopPoll poll = {});
[[nodiscard]] Trace parse_rmm_csv(const std::filesystem::path& path, std::istream& in,
                                  StopPoll poll = {});

// The place a field came from, for messages.
struct Place {
  const std::filesystem::path& file;
  std::uint64_t line;
  std::string_view column;
};
[[noreturn]] void bad_input(const Place& place, std::string_view what);

// The trace file, opened for binary reading, or Error(input) "FILE: cannot open the trace".
[[nodiscard]] std::ifstream open_trace(const std::filesystem::path& path);

// No trace is larger than this: a size past it is a corrupt field, not an allocation.
inline constexpr std::uint64_t kLargestSize = 1ULL << 56U;  // 64 PiB

[[nodiscard]] std::uint64_t read_decimal(std::string_view text, const Place& place);
// A size: decimal, not negative, not past kLargestSize.
[[nodiscard]] std::uint64_t read_size(std::string_view text, const Place& place);
// 0x7f00..., 7f00... or (nil).
[[nodiscard]] std::uint64_t read_hex(std::string_view text, const Place& place);
// RMM's HH:MM:SS.ffffff (or seconds since the epoch, as newer RMM writes) in nanoseconds.
[[nodiscard]] std::uint64_t read_clock(std::string_view text, const Place& place);

// The same from a NUL-terminated field (the CSV reader's), in one pass: what every row takes.
// A field they cannot take in one pass goes to the readers above, which accept or refuse it.
[[nodiscard]] std::uint64_t read_decimal_field(const char* field, const Place& place);
[[nodiscard]] std::uint64_t read_size_field(const char* field, const Place& place);
[[nodiscard]] std::uint64_t read_hex_field(const char* field, const Place& place);
[[nodiscard]] std::uint64_t read_clock_field(const char* field, const Place& place);

}  // namespace oomlab::trace
