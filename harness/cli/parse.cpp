#include "cli/parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>

#include "allocators/backends.hpp"
#include "cli/size_text.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::cli {

Bytes parse_size(std::string_view text) {
  const SizeText size = read_size_text(text);
  if (!size.whole_bytes()) throw_usage(fmt::format("'{}' is not a whole number of bytes", text));
  const Wide bytes = size.numerator / size.denominator;
  if (bytes > UINT64_MAX) throw_usage(fmt::format("'{}' is too large a size", text));
  return Bytes{static_cast<std::uint64_t>(bytes)};
}

Percent parse_percent(std::string_view text) {
  std::string_view body = trim(text);
  if (body.empty() || body.back() != '%')
    throw_usage(fmt::format("'{}' is not a percentage", text));
  body.remove_suffix(1);
  Decimal number;
  std::string_view rest;
  if (!split_decimal(trim(body), number, rest) || !rest.empty()) {
    throw_usage(fmt::format("'{}' is not a percentage (expected e.g. 25%)", text));
  }
  const double value = parse_real(trim(body));
  if (!(value > 0.0 && value <= 100.0)) {
    throw_usage(fmt::format(
        "'{}' is out of range: a percentage must be more than 0% and at most 100%", text));
  }
  return Percent{value};
}

Fraction parse_fraction(std::string_view text) {
  const std::string_view body = trim(text);
  const auto slash = body.find('/');
  Fraction f;
  if (slash != std::string_view::npos) {
    f.numerator = parse_unsigned(body.substr(0, slash));
    f.denominator = parse_unsigned(body.substr(slash + 1));
    if (f.denominator == 0) throw_usage(fmt::format("'{}': the denominator must not be 0", text));
  } else {
    Decimal number;
    std::string_view rest;
    if (!split_decimal(body, number, rest) || !rest.empty() || number.fraction.size() > 18) {
      throw_usage(fmt::format("'{}' is not a fraction (expected e.g. 1/32 or 0.25)", text));
    }
    f.denominator = 1;
    for (std::size_t i = 0; i < number.fraction.size(); ++i)
      f.denominator *= 10;
    f.numerator = parse_unsigned(std::string(number.whole.empty() ? "0" : number.whole) +
                                 std::string(number.fraction));
  }
  if (f.numerator > f.denominator) throw_usage(fmt::format("'{}' is more than 1", text));
  const std::uint64_t g = std::gcd(f.numerator, f.denominator);
  if (g > 1) {
    f.numerator /= g;
    f.denominator /= g;
  }
  return f;
}

bool parse_flag(std::string_view text) {
  const std::string v = lower(trim(text));
  if (v == "on" || v == "true" || v == "yes" || v == "1") return true;
  if (v == "off" || v == "false" || v == "no" || v == "0") return false;
  throw_usage(fmt::format("'{}' is not on or off (use on|off, true|false, yes|no, 1|0)", text));
}

namespace {
// The whole of `text` (spaces aside) as one integer of type T.
template <typename T>
T parse_whole(std::string_view text) {
  const std::string_view body = trim(text);
  T value{};
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ec == std::errc::result_out_of_range) throw_usage(fmt::format("'{}' is out of range", text));
  if (ec != std::errc() || end != body.data() + body.size() || body.empty()) {
    throw_usage(fmt::format("'{}' is not a whole number", text));
  }
  return value;
}
}  // namespace

std::int64_t parse_integer(std::string_view text) {
  return parse_whole<std::int64_t>(text);
}

std::uint64_t parse_unsigned(std::string_view text) {
  if (const std::string_view body = trim(text); !body.empty() && body.front() == '-') {
    throw_usage(fmt::format("'{}' must not be negative", text));
  }
  return parse_whole<std::uint64_t>(text);
}

bool whole_number_below_one(std::string_view text) {
  const std::string_view body = trim(text);
  const bool negative = body.starts_with('-');
  const std::string_view digits = negative ? body.substr(1) : body;
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  // No whole number at all: the caller's own words say so.
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), digit)) return false;
  return negative || digits.find_first_not_of('0') == std::string_view::npos;
}

int parse_device_index(std::string_view text) {
  const std::uint64_t index = parse_unsigned(text);
  if (index > 1024) throw_usage(fmt::format("'{}' is not a device index", text));
  return static_cast<int>(index);
}

double parse_real(std::string_view text) {
  const std::string body(trim(text));
  if (body.empty()) throw_usage("an empty value is not a number");
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(body, &used);
  } catch (const std::exception&) {
    throw_usage(fmt::format("'{}' is not a number", text));
  }
  if (used != body.size() || !std::isfinite(value))
    throw_usage(fmt::format("'{}' is not a finite number", text));
  return value;
}

namespace {
ChoiceList parse_choice_list(const ParamDef& def, std::string_view text) {
  ChoiceList list;
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string item(trim(rest.substr(0, comma)));
    if (std::find(def.choices.begin(), def.choices.end(), item) == def.choices.end()) {
      throw_usage(fmt::format("'{}' is not one of {}{}", item, fmt::join(def.choices, "|"),
                              did_you_mean(item, def.choices)));
    }
    if (std::find(list.begin(), list.end(), item) != list.end()) {
      throw_usage(fmt::format("'{}' is listed twice", item));
    }
    list.push_back(item);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return list;
}
}  // namespace

ParamValue parse_param_value(const ParamDef& def, std::string_view text) {
  switch (def.type) {
    case ParamType::bytes:
      if (def.accepts_max && lower(trim(text)) == "max") return Bytes{UINT64_MAX};
      return parse_size(text);
    case ParamType::integer: {
      const std::int64_t value = parse_integer(text);
      if (def.min_integer && value < *def.min_integer) {
        throw_usage(
            fmt::format("'{}' is below the least allowed value {}", text, *def.min_integer));
      }
      return value;
    }
    case ParamType::real:
      return parse_real(text);
    case ParamType::fraction:
      return parse_fraction(text);
    case ParamType::flag:
      return parse_flag(text);
    case ParamType::choice: {
      const std::string value(trim(text));
      if (std::find(def.choices.begin(), def.choices.end(), value) == def.choices.end()) {
        throw_usage(fmt::format("'{}' is not one of {}{}", text, fmt::join(def.choices, "|"),
                                did_you_mean(value, def.choices)));
      }
      return value;
    }
    case ParamType::choices:
      return parse_choice_list(def, text);
    case ParamType::text:
      return std::string(text);
  }
  throw_usage("unknown parameter type");
}

Params parse_params(const ParamSpec& spec, const std::vector<std::string>& assignments,
                    std::string_view owner, std::string_view flag) {
  Params params(spec);
  std::vector<std::string> names;
  names.reserve(spec.size());
  for (const auto& def : spec)
    names.push_back(def.name);
  std::vector<std::string> seen;
  for (const std::string& assignment : assignments) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw_usage(fmt::format("{}: expected key=value, got '{}'", flag, assignment));
    }
    const std::string key(trim(std::string_view(assignment).substr(0, eq)));
    const std::string_view value = std::string_view(assignment).substr(eq + 1);
    const auto def =
        std::find_if(spec.begin(), spec.end(), [&](const ParamDef& d) { return d.name == key; });
    if (def == spec.end()) {
      if (spec.empty())
        throw_usage(fmt::format("{}: {} takes no parameters, got '{}'", flag, owner, key));
      throw_usage(fmt::format("{}: unknown parameter '{}' for {}{} (known: {})", flag, key, owner,
                              did_you_mean(key, names), fmt::join(names, ", ")));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw_usage(fmt::format("{}: '{}' is given twice", flag, key));
    }
    seen.push_back(key);
    try {
      params.set(key, parse_param_value(*def, value));
    } catch (const Error& e) {
      throw_usage(fmt::format("{} {}: {}", flag, key, e.what()));
    }
  }
  return params;
}

const SettingsSpelling* settings_spelling_of(std::string_view backend) {
  for (const Framework& framework : Registry::global().frameworks()) {
    if (framework.settings_spelling && framework.settings_spelling->backend == backend)
      return &*framework.settings_spelling;
  }
  return nullptr;
}

const SettingsSpelling* settings_spelling() {
  for (const Framework& framework : Registry::global().frameworks()) {
    if (framework.settings_spelling) return &*framework.settings_spelling;
  }
  return nullptr;
}

AllocatorChoice parse_allocator(std::string_view text) {
  const std::string_view body = trim(text);
  const auto colon = body.find(':');
  const std::string name(trim(body.substr(0, colon)));
  std::vector<std::string> names;
  for (const auto& b : backend_catalog())
    names.push_back(b.name);
  const BackendInfo* info = find_backend(name);
  if (info == nullptr) {
    throw_usage(fmt::format("--allocator: unknown allocator '{}'{} (known: {})", name,
                            did_you_mean(name, names), fmt::join(names, ", ")));
  }
  std::vector<std::string> assignments;
  const SettingsSpelling* spelling = settings_spelling_of(info->name);
  if (colon != std::string_view::npos && spelling != nullptr) {
    // The framework's own spelling too: -a torch:expandable_segments:True,max_split_size_mb:128.
    const std::string_view rest = body.substr(colon + 1);
    if (trim(rest).empty()) throw_usage(fmt::format("--allocator: no options after '{}:'", name));
    assignments = spelling->assignments(rest, "--allocator");
  } else if (colon != std::string_view::npos) {
    std::string_view rest = body.substr(colon + 1);
    if (trim(rest).empty()) throw_usage(fmt::format("--allocator: no options after '{}:'", name));
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      assignments.emplace_back(trim(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  AllocatorChoice choice{
      info->kind,
      parse_params(info->options, assignments, fmt::format("allocator '{}'", name), "--allocator")};
  if (info->validate != nullptr) info->validate(choice.options);
  return choice;
}

VerifyMode parse_verify_mode(std::string_view text) {
  const std::string value = lower(trim(text));
  if (value == "all") return VerifyMode::all;
  if (value == "sample") return VerifyMode::sample;
  if (value == "off") return VerifyMode::off;
  throw_usage(fmt::format("'{}' is not all, sample or off{}", text,
                          did_you_mean(value, {"all", "sample", "off"})));
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string closest_name(std::string_view input, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, input.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(lower(input), lower(candidate));
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view input, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(input, candidates);
  return best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best);
}

}  // namespace oomlab::cli
