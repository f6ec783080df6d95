#include "cli/series_cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "allocators/backends.hpp"
#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"

namespace oomlab::cli {

namespace {

std::pair<std::string, std::string> name_and_rest(const std::string& text, std::string_view flag,
                                                  std::string_view example) {
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    throw_usage(fmt::format("{}: '{}' is not NAME={}", flag, text, example));
  std::string name = text.substr(0, equals);
  const bool word = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
  if (!word || std::isdigit(static_cast<unsigned char>(name.front())) != 0) {
    throw_usage(fmt::format(
        "{}: '{}': '{}' is not a name (letters, digits and '_', not starting with a digit)", flag,
        text, name));
  }
  return {std::move(name), text.substr(equals + 1)};
}

std::uint64_t whole(const std::string& text, std::string_view flag, std::string_view word) {
  try {
    return parse_unsigned(word);
  } catch (const Error&) {
    throw_usage(fmt::format("{}: '{}': '{}' is not a whole number", flag, text, word));
  }
}

// A series is made along values of 1 or more: a line through batch 0 makes no program.
constexpr std::string_view kOneOrMore = "a whole number of 1 or more";

}  // namespace

SeriesAsked parse_series_values(const std::string& text, std::string_view flag) {
  auto [name, rest] = name_and_rest(text, flag, "V1,V2 (batch=1,2)");
  SeriesAsked asked{.name = std::move(name)};
  std::size_t at = 0;
  while (at <= rest.size()) {
    const std::size_t comma = std::min(rest.find(',', at), rest.size());
    const std::string word = rest.substr(at, comma - at);
    if (whole_number_below_one(word))
      throw_usage(
          fmt::format("{}: {}: each value must be {}, not {}", flag, text, kOneOrMore, word));
    const std::uint64_t value = whole(text, flag, word);
    if (std::find(asked.values.begin(), asked.values.end(), value) != asked.values.end())
      throw_usage(fmt::format("{}: '{}': {} is given twice", flag, text, value));
    asked.values.push_back(value);
    at = comma + 1;
  }
  if (asked.values.size() < 2) {
    throw_usage(fmt::format(
        "{}: '{}': give the values of two snapshots or more (batch=1,2): a line needs two", flag,
        text));
  }
  std::sort(asked.values.begin(), asked.values.end());
  return asked;
}

std::pair<std::string, std::uint64_t> parse_series_value(const std::string& text,
                                                         std::string_view flag) {
  auto [name, rest] = name_and_rest(text, flag, "N (batch=64)");
  if (whole_number_below_one(rest))
    throw_usage(fmt::format("{}: {}: the value must be {}", flag, text, kOneOrMore));
  return {std::move(name), whole(text, flag, rest)};
}

std::string series_path(const std::string& pattern, const std::string& name, std::uint64_t value) {
  const std::string placeholder = "{" + name + "}";
  const std::string text = std::to_string(value);
  std::string out = pattern;
  for (std::size_t at = out.find(placeholder); at != std::string::npos;
       at = out.find(placeholder, at + text.size()))
    out.replace(at, placeholder.size(), text);
  return out;
}

namespace {

// A recorded setting of the allocator, as the user would write it; none where the trace did not
// record it.
std::optional<std::string> setting_of(const RecordedSettings& r, const std::string& name) {
  const auto it = r.options.find(name);
  if (it == r.options.end()) return std::nullopt;
  return format_param_value(it->second);
}

// Every snapshot of a series recorded under the same allocator settings (a preallocated pool
// and a grown one, or two PYTORCH_CUDA_ALLOC_CONFs, are two programs): the first that differs
// in an option of the backend that models the recording (one a user can set) is refused.
void check_same_settings(const std::vector<trace::SeriesPoint>& points, const std::string& name) {
  const RecordedSettings* first = trace::allocator_settings(*points.front().trace);
  const BackendInfo* backend =
      first == nullptr || first->backend.empty() ? nullptr : find_backend(first->backend);
  if (backend == nullptr) return;
  for (std::size_t k = 1; k < points.size(); ++k) {
    const RecordedSettings* other = trace::allocator_settings(*points[k].trace);
    for (const ParamDef& option : backend->options) {
      const auto a = setting_of(*first, option.name);
      const auto b = other == nullptr ? std::nullopt : setting_of(*other, option.name);
      if (a == b) continue;
      const auto said = [&](const std::optional<std::string>& v) {
        return v ? fmt::format("{}={}", option.name, *v) : option.name + " not recorded";
      };
      throw Error(ErrorKind::input,
                  fmt::format("--from: the snapshot at {}={} was recorded with {}, the one at "
                              "{}={} with {}: a series is one program at several values; record "
                              "them under the same allocator settings",
                              name, points[k].value, said(b), name, points.front().value, said(a)));
    }
  }
}

}  // namespace

trace::TraceSeries load_series(const std::string& pattern, const SeriesAsked& asked,
                               const trace::LoadOptions& device,
                               const std::function<void()>& check_stop) {
  if (pattern.find("{" + asked.name + "}") == std::string::npos) {
    throw_usage(fmt::format(
        "--trace: '{}' has no {{{}}}: with --from, --trace names every snapshot, {{{}}} where "
        "each one's value goes (--trace 'runs/snap_b{{{}}}.pickle')",
        pattern, asked.name, asked.name, asked.name));
  }
  std::vector<trace::SeriesPoint> points;
  for (const std::uint64_t value : asked.values) {
    const std::string path = series_path(pattern, asked.name, value);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw Error(ErrorKind::input, fmt::format("{}: no such file (the snapshot at {}={}, from "
                                                "--trace '{}')",
                                                path, asked.name, value, pattern));
    }
    points.push_back({.value = value,
                      .trace = std::make_shared<const trace::Trace>(
                          trace::load(path, {.device = device.device,
                                             .device_option = device.device_option,
                                             .check_stop = check_stop}))});
  }
  for (const trace::SeriesPoint& p : points) {
    if (!trace::ends_at_failure(*p.trace)) continue;
    throw Error(ErrorKind::input,
                fmt::format("--from: the snapshot at {}={} ({}) ends at the program's OOM: what it "
                            "would have asked for after it is not in it; a series is made from "
                            "runs that completed",
                            asked.name, p.value, series_path(pattern, asked.name, p.value)));
  }
  check_same_settings(points, asked.name);
  return {asked.name, std::move(points)};
}

namespace {

std::string_view rule_words(trace::TraceSeries::Rule rule) {
  switch (rule) {
    case trace::TraceSeries::Rule::lines:
      return "made on their lines (--transients)";
    case trace::TraceSeries::Rule::held:
      return "held at their size in the largest snapshot (--transients held)";
    case trace::TraceSeries::Rule::refusable:
      return "asked for on their lines and given up when refused, as a convolution falls back "
             "to a smaller workspace (--transients refusable): the most a capped program fits";
  }
  return "";
}

}  // namespace

std::vector<std::string> series_notes(const trace::TraceSeries& series,
                                      std::optional<trace::TraceSeries::Rule> rule) {
  const trace::SeriesFit& f = series.fit();
  std::vector<std::uint64_t> values;
  for (const trace::SeriesPoint& p : series.points())
    values.push_back(p.value);
  std::vector<std::string> out;
  for (const trace::SeriesPoint& p : series.points()) {  // the device each was read at, once
    for (const std::string& notice : p.trace->notices) {
      if (std::find(out.begin(), out.end(), notice) == out.end()) out.push_back(notice);
    }
  }
  out.push_back(fmt::format(
      "made from the snapshots at {}={}: of the {} requests at {}={}, {} ({:.1f}%) have a "
      "counterpart at every value, {} of them change with {}; {} are at {}={} only (kept at "
      "their size there), {} at the other values only (left out)",
      series.name(), fmt::join(values, ","), format_count(f.requests), series.name(), values.back(),
      format_count(f.matched), 100.0 * f.aligned_share, format_count(f.scaling), series.name(),
      format_count(f.anchor_only), series.name(), values.back(), format_count(f.elsewhere_only)));
  if (f.side > 0) {
    out.push_back(fmt::format(
        "{} requests on the snapshots' other streams (the framework's own work, such as a "
        "compiler's autotuning) are made at {}={}'s size at every value, each held until its "
        "free and refusable: under that value a made trace can ask more than the value's own "
        "snapshot",
        format_count(f.side), series.name(), values.back()));
  }
  if (values.size() > 2) {
    std::string places;
    for (std::size_t i = 0; i < f.off_line_places.size() && i < 3; ++i) {
      places += fmt::format("{}{} ({})", i == 0 ? "" : ", ", f.off_line_places[i].first,
                            format_count(f.off_line_places[i].second));
    }
    out.push_back(fmt::format(
        "{} requests are not on one line in {} (each follows its last two values){}",
        format_count(f.off_line), series.name(), places.empty() ? "" : ": most at " + places));
  }
  if (rule && f.transient > 0) {
    out.push_back(fmt::format(
        "{} requests live inside one call and change with {} (a library's workspaces, such as "
        "cuDNN's): {}",
        format_count(f.transient), series.name(), rule_words(*rule)));
  }
  if (f.failures > 0) {
    out.push_back(
        fmt::format("the snapshot at {}={} holds {} failed requests: each is asked again "
                    "where it was, at its line's size",
                    series.name(), values.back(), format_count(f.failures)));
  }
  return out;
}

}  // namespace oomlab::cli
