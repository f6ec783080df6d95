// Small texts the compare and fleet tables share: a Markdown cell, a change, a tolerance.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

namespace oomlab {

// A Markdown table cell: '|' escaped, a line break as a space.
[[nodiscard]] inline std::string markdown_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

// A relative change: "+3.1%", "-inf%".
[[nodiscard]] inline std::string change_percent(double relative) {
  if (std::isinf(relative)) return relative > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.1f}%", 100.0 * relative);
}

// A tolerance as given: "5%", "2.5%".
[[nodiscard]] inline std::string tolerance_text(double tolerance) {
  return fmt::format("{:g}%", 100.0 * tolerance);
}

}  // namespace oomlab
