// The CSV readers' fast path: a field as the CSV reader hands it out (NUL-terminated), converted
// in one pass without measuring it first. Only the common shapes are taken here (field_scan.hpp);
// anything else (a sign, a 20-digit number, (nil), a bad character) goes to the string_view
// readers, whose messages are the only ones a bad field gets.
#include <string_view>

#include "trace/field_scan.hpp"
#include "trace/importers.hpp"

namespace oomlab::trace {

std::uint64_t read_decimal_field(const char* field, const Place& place) {
  std::uint64_t value = 0;
  const char* end = scan::decimal(field, 19, value);  // 19 digits cannot overflow
  if (end != nullptr && *end == '\0') return value;
  return read_decimal(std::string_view(field), place);
}

std::uint64_t read_size_field(const char* field, const Place& place) {
  std::uint64_t value = 0;
  const char* end = scan::decimal(field, 19, value);
  if (end != nullptr && *end == '\0' && value <= kLargestSize) return value;
  return read_size(std::string_view(field), place);
}

std::uint64_t read_hex_field(const char* field, const Place& place) {
  std::uint64_t value = 0;
  const char* end = scan::hex(field, value);
  if (end != nullptr && *end == '\0') return value;
  return read_hex(std::string_view(field), place);
}

std::uint64_t read_clock_field(const char* field, const Place& place) {
  std::uint64_t ns = 0;
  const char* end = scan::clock_ns(field, ns);
  if (end != nullptr && *end == '\0') return ns;
  return read_clock(std::string_view(field), place);
}

}  // namespace oomlab::trace
