// One line of the log the trace format `xla` reads: XLA's (absl's) or TensorFlow's (tsl's own
// sink) prefix, its time of day, thread and message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlab::jax {

// A log line of XLA's (absl's), "I1129 01:46:33.048540    1192 bfc_allocator.cc:388] MESSAGE",
// or TensorFlow's (tsl's own sink), "2026-11-29 01:46:33.048540: I tensorflow/.../
// bfc_allocator.cc:388] MESSAGE", whose thread is there only with TF_CPP_LOG_THREAD_ID=1
// ("...: I    1192 tensorflow/..."): 0 without it.
struct LogLine {
  std::uint64_t t_ns = 0;  // time of day
  std::uint64_t thread = 0;
  bool thread_known = false;  // the line names its thread
  std::string_view message;
};

[[nodiscard]] constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
// A count in decimal digits; none for anything else, or a count past 2^64.
[[nodiscard]] std::optional<std::uint64_t> digits(std::string_view text);
// "HH:MM:SS.ffffff" at `at` as nanoseconds of the day; none where it is not a time.
[[nodiscard]] std::optional<std::uint64_t> time_of_day(std::string_view line, std::size_t at);
// Where TensorFlow's prefix ends ("2026-11-29 01:46:33.048540: I"), or 0 where it is not one.
[[nodiscard]] std::size_t tensorflow_prefix(std::string_view line);
[[nodiscard]] std::optional<LogLine> read_log_line(std::string_view line);

}  // namespace oomlab::jax
