// --budget's text: a size, N%, all or a card's name. A size is read as written, with a note where
// the reading may surprise: a fraction of a byte rounded to the page, an SI unit where an IEC one
// was common.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "cli/card_names.hpp"
#include "cli/parse.hpp"
#include "cli/size_text.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {

namespace {

// The nearest whole number of device pages (at least one): what a budget of a fraction of a byte
// (1.9GiB is 2,040,109,465.6 B) is taken to mean.
std::uint64_t nearest_page(const SizeText& size) {
  const Wide page = Wide{kDevicePageBytes} * size.denominator;
  Wide pages = (size.numerator + page / 2) / page;
  if (pages == 0) pages = 1;
  const Wide bytes = pages * kDevicePageBytes;
  if (bytes > UINT64_MAX) throw_usage(fmt::format("'{}' is too large a size", size.number));
  return static_cast<std::uint64_t>(bytes);
}

// 8GB is 8,000,000,000 B, 8GiB 8,589,934,592: people often write the one and mean the other.
std::string si_note(std::string_view written, const SizeText& size, std::uint64_t bytes) {
  const std::string unit = lower(size.unit);
  std::string iec;
  if (unit == "mb") iec = "MiB";
  if (unit == "gb") iec = "GiB";
  if (unit == "tb") iec = "TiB";
  if (iec.empty()) return {};
  const SizeText meant = read_size_text(size.number + iec);
  const std::string meant_bytes =
      meant.whole_bytes() ? fmt::format(" ({} B)", format_count(static_cast<std::uint64_t>(
                                                       meant.numerator / meant.denominator)))
                          : std::string();
  return fmt::format(
      "--budget: {} is read as {} B ({}): {} counts in powers of 1000; did you mean {}{}{}?",
      written, format_count(bytes), format_bytes(bytes), size.unit, size.number, iec, meant_bytes);
}

// Card names hold a digit (T4, A100-80GB): a word near one is a card mistyped; other words are
// sizes gone wrong, and read_size_text says so.
void refuse_near_card(std::string_view body) {
  std::vector<std::string> names;
  std::vector<std::string> starting;  // "a100": A100-40GB and A100-80GB, not A10G one letter off
  for (const Card& card : known_cards()) {
    names.emplace_back(card.name);
    if (lower(card.name).starts_with(lower(body))) starting.emplace_back(card.name);
  }
  const std::string near =
      starting.empty() ? did_you_mean(body, names)
                       : fmt::format(" (did you mean '{}'?)", fmt::join(starting, "' or '"));
  const bool digit = std::any_of(body.begin(), body.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (!near.empty() && digit) {
    throw_usage(fmt::format(
        "'{}' is not a budget: a size (8GiB), N%, all, or a card{} (oomlab list --cards)", body,
        near));
  }
}

}  // namespace

BudgetReading read_budget(std::string_view text) {
  const std::string_view body = trim(text);
  if (lower(body) == "all") return {.request = {.kind = BudgetRequest::Kind::all}};
  if (!body.empty() && body.back() == '%') {
    return {.request = {.kind = BudgetRequest::Kind::percent, .percent = parse_percent(body)}};
  }
  if (!body.empty() && std::isalpha(static_cast<unsigned char>(body.front())) != 0) {
    if (const Card* card = card_by_name(body))
      return {.request = {.kind = BudgetRequest::Kind::card, .card = card}};
    refuse_near_card(body);
  }
  const SizeText size = read_size_text(body);
  BudgetReading reading;
  std::uint64_t bytes = 0;
  if (size.whole_bytes()) {
    bytes = parse_size(body).value;
  } else {
    bytes = nearest_page(size);
    reading.notes.push_back(fmt::format(
        "--budget: {} is not a whole number of bytes: rounded to the nearest {} page, {} B ({})",
        body, format_bytes(kDevicePageBytes), format_count(bytes), format_bytes(bytes)));
  }
  if (bytes == 0) throw_usage("a budget of 0 bytes leaves nothing to allocate");
  if (std::string note = si_note(body, size, bytes); !note.empty())
    reading.notes.push_back(std::move(note));
  reading.request = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{bytes}};
  return reading;
}

BudgetRequest parse_budget(std::string_view text) {
  return read_budget(text).request;
}

}  // namespace oomlab::cli
