#include "reports/matrix/versions.hpp"

#include <cctype>

namespace oomlab {

namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// The run of digits, or of anything else, that starts `text`; taken off it.
std::string_view take_run(std::string_view& text) {
  std::size_t n = 0;
  const bool digits = is_digit(text.front());
  while (n < text.size() && is_digit(text[n]) == digits)
    ++n;
  const std::string_view run = text.substr(0, n);
  text.remove_prefix(n);
  return run;
}

int compare_numbers(std::string_view a, std::string_view b) {
  while (a.size() > 1 && a.front() == '0')
    a.remove_prefix(1);
  while (b.size() > 1 && b.front() == '0')
    b.remove_prefix(1);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
  while (!a.empty() && !b.empty()) {
    const bool numbers = is_digit(a.front()) && is_digit(b.front());
    const std::string_view x = take_run(a);
    const std::string_view y = take_run(b);
    const int c = numbers ? compare_numbers(x, y) : x.compare(y);
    if (c != 0) return c < 0 ? -1 : 1;
  }
  if (a.empty() == b.empty()) return 0;
  return a.empty() ? -1 : 1;
}

}  // namespace oomlab
