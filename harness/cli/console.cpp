#include "cli/console.hpp"

#include <fmt/format.h>

namespace oomlab::cli {

std::string progress_line(std::string_view name, const ProgressSnapshot& s) {
  const double share = s.budget_bytes == 0 ? 0.0
                                           : 100.0 * static_cast<double>(s.live_bytes) /
                                                 static_cast<double>(s.budget_bytes);
  return fmt::format("{} · {} · step {} · {} events · live {} of {} ({:.0f}%) · {:.1f} s", name,
                     s.phase.empty() ? "start" : s.phase, s.step, format_count(s.events),
                     format_bytes(s.live_bytes), format_bytes(s.budget_bytes), share, s.elapsed_s);
}

}  // namespace oomlab::cli
