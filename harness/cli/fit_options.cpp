#include "cli/fit_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {

namespace {

constexpr std::string_view kRangeHelp = "NAME=LO..HI, e.g. batch=1..512";

bool valid_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// A search doubles from LO: from 0 it would never leave it, and a value under 0 is no setting.
std::uint64_t end_of_range(const std::string& text, std::string_view which, std::string_view at) {
  if (whole_number_below_one(at)) {
    throw_usage(fmt::format("--range: {}: {} must be a whole number of 1 or more, not {}", text,
                            which, at));
  }
  try {
    return parse_unsigned(at);
  } catch (const Error&) {
    throw_usage(fmt::format("--range: '{}': {} '{}' is not a whole number ({})", text, which, at,
                            kRangeHelp));
  }
}

}  // namespace

FitRange parse_fit_range(const std::string& text) {
  if (text.empty()) throw_usage(fmt::format("fit: --range is needed: {}", kRangeHelp));
  const std::size_t equals = text.find('=');
  const std::size_t dots = text.find("..", equals == std::string::npos ? 0 : equals);
  if (equals == std::string::npos || dots == std::string::npos)
    throw_usage(fmt::format("--range: '{}' is not {}", text, kRangeHelp));
  FitRange range{.name = text.substr(0, equals)};
  if (!valid_name(range.name)) {
    throw_usage(fmt::format(
        "--range: '{}': '{}' is not a name (letters, digits and '_', not starting with a digit)",
        text, range.name));
  }
  range.lo = end_of_range(text, "LO", std::string_view(text).substr(equals + 1, dots - equals - 1));
  range.hi = end_of_range(text, "HI", std::string_view(text).substr(dots + 2));
  if (range.lo > range.hi) {
    throw_usage(
        fmt::format("--range: '{}': LO ({}) is more than HI ({})", text, range.lo, range.hi));
  }
  if (range.hi > static_cast<std::uint64_t>(INT64_MAX))
    throw_usage(fmt::format("--range: '{}': HI is too large", text));
  return range;
}

void check_fit_parameter(const FitRange& range, const std::string& scenario, const ParamSpec& spec,
                         const std::vector<std::string>& assignments) {
  std::vector<std::string> whole;
  for (const ParamDef& def : spec) {
    if (def.type == ParamType::integer) whole.push_back(def.name);
  }
  const auto def = std::find_if(spec.begin(), spec.end(),
                                [&](const ParamDef& d) { return d.name == range.name; });
  if (def == spec.end() || def->type != ParamType::integer) {
    throw_usage(
        fmt::format("--range: scenario '{}' has no whole-number parameter '{}'{} (its "
                    "whole-number parameters: {})",
                    scenario, range.name, did_you_mean(range.name, whole),
                    whole.empty() ? "none" : fmt::format("{}", fmt::join(whole, ", "))));
  }
  if (def->min_integer && static_cast<std::int64_t>(range.lo) < *def->min_integer) {
    throw_usage(fmt::format("--range: {}'s least value is {}, not {}", range.name,
                            *def->min_integer, range.lo));
  }
  for (const std::string& a : assignments) {
    if (a.starts_with(range.name + "=")) {
      throw_usage(
          fmt::format("--range {} and --param {} both set it: give it once", range.name, a));
    }
  }
}

unsigned parse_confirm(const std::string& text) {
  std::uint64_t confirm = 0;
  try {
    confirm = parse_unsigned(text);
  } catch (const Error& e) {
    throw_usage(fmt::format("--confirm: {}", e.what()));
  }
  if (confirm > 100) throw_usage(fmt::format("--confirm: '{}' is more than 100", text));
  return static_cast<unsigned>(confirm);
}

int fit_exit_code(const FitResult& r) {
  if (r.timed_out) return kExitCellFailed;
  if (!r.answer || !r.stopped.empty() || r.not_monotonic) return kExitCheckFailed;
  return kExitOk;
}

void check_fit_command(const FitRange& range, const std::vector<std::string>& command) {
  const std::string placeholder = "{" + range.name + "}";
  const bool holds = std::any_of(command.begin(), command.end(), [&](const std::string& word) {
    return word.find(placeholder) != std::string::npos;
  });
  if (!holds) {
    throw_usage(
        fmt::format("fit exec: the command has no {}: put it where the value goes "
                    "(oomlab fit exec --budget 24GiB --range {}=1..512 -- python train.py "
                    "--{} {})",
                    placeholder, range.name, range.name, placeholder));
  }
}

namespace {

GridAxis parse_grid_axis(const std::string& text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos) {
    throw_usage(fmt::format(
        "--grid: '{}' is not NAME=V1,V2,... (a knob and its values: --grid vae=,--vae-slicing)",
        text));
  }
  GridAxis axis{.name = text.substr(0, equals)};
  if (!valid_name(axis.name)) {
    throw_usage(fmt::format(
        "--grid: '{}': '{}' is not a name (letters, digits and '_', not starting with a digit)",
        text, axis.name));
  }
  const std::string_view values = std::string_view(text).substr(equals + 1);
  for (std::size_t from = 0;;) {
    const std::size_t comma = values.find(',', from);
    axis.values.emplace_back(values.substr(from, comma - from));
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  if (axis.values.size() < 2) {
    throw_usage(
        fmt::format("--grid: '{}': {} has one value: give two or more (an empty one "
                    "drops its word: {}=,--flag)",
                    text, axis.name, axis.name));
  }
  for (std::size_t i = 0; i < axis.values.size(); ++i) {
    if (std::find(axis.values.begin(), axis.values.begin() + static_cast<std::ptrdiff_t>(i),
                  axis.values[i]) != axis.values.begin() + static_cast<std::ptrdiff_t>(i))
      throw_usage(fmt::format("--grid: '{}': the value '{}' is given twice", text, axis.values[i]));
  }
  return axis;
}

}  // namespace

std::vector<GridAxis> parse_grid(const std::vector<std::string>& texts, const FitRange& range,
                                 const std::vector<std::string>& command) {
  std::vector<GridAxis> axes;
  std::size_t combinations = 1;
  for (const std::string& text : texts) {
    GridAxis axis = parse_grid_axis(text);
    const bool taken = axis.name == range.name ||
                       std::any_of(axes.begin(), axes.end(),
                                   [&](const GridAxis& a) { return a.name == axis.name; });
    if (taken) {
      throw_usage(fmt::format("--grid: '{}': {} is already {}", text, axis.name,
                              axis.name == range.name ? "--range's name" : "another --grid's"));
    }
    const std::string placeholder = "{" + axis.name + "}";
    if (std::none_of(command.begin(), command.end(), [&](const std::string& word) {
          return word.find(placeholder) != std::string::npos;
        })) {
      throw_usage(fmt::format(
          "--grid: '{}': the command has no {}: put it where the knob's value goes (--grid "
          "vae=,--vae-slicing -- python run.py --batch {{batch}} {{vae}})",
          text, placeholder));
    }
    combinations *= axis.values.size();
    if (combinations > kMostGridSettings) {
      throw_usage(
          fmt::format("--grid: more than {} combinations of the knobs' values", kMostGridSettings));
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

std::uint64_t parse_outside(const std::string& text) {
  try {
    return parse_size(text).value;
  } catch (const Error& e) {
    throw_usage(fmt::format("--outside: {}", e.what()));
  }
}

}  // namespace oomlab::cli
