#include "cli/console.hpp"

#include <fmt/format.h>

namespace oomlab::cli {

std::string progress_line(std::string_view name, const ProgressSnapshot& s) {
  if (s.loading) {
    const std::string read =
        s.input_read_bytes == 0 || s.input_total_bytes == 0
            ? fmt::format("{} file", format_bytes(s.input_total_bytes))
            : fmt::format("{} of {} ({:.0f}%)", format_bytes(s.input_read_bytes),
                          format_bytes(s.input_total_bytes),
                          100.0 * static_cast<double>(s.input_read_bytes) /
                              static_cast<double>(s.input_total_bytes));
    return fmt::format("{} · reading the trace · {} · {} events · {:.1f} s", name, read,
                       format_count(s.events), s.elapsed_s);
  }
  const double share = s.budget_bytes == 0 ? 0.0
                                           : 100.0 * static_cast<double>(s.live_bytes) /
                                                 static_cast<double>(s.budget_bytes);
  return fmt::format("{} · {} · step {} · {} events · live {} of {} ({:.0f}%) · {:.1f} s", name,
                     s.phase.empty() ? "start" : s.phase, s.step, format_count(s.events),
                     format_bytes(s.live_bytes), format_bytes(s.budget_bytes), share, s.elapsed_s);
}

}  // namespace oomlab::cli
