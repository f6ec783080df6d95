#include "jax/exec/xla_program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <initializer_list>
#include <system_error>

#include "jax/trace/xla_log_line.hpp"
#include "oomlab/units.hpp"

namespace oomlab::jax {
namespace {

constexpr std::array<std::string_view, 2> kFractionVariables = {"XLA_CLIENT_MEM_FRACTION",
                                                                "XLA_PYTHON_CLIENT_MEM_FRACTION"};

std::optional<double> read_fraction(std::string_view text) {
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value > 0.0)) return std::nullopt;
  return value;
}

}  // namespace

CardSizing::Variables card_variables(
    std::uint64_t budget_bytes, std::uint64_t device_total_bytes,
    const std::function<std::optional<std::string>(std::string_view)>& current) {
  CardSizing::Variables out;
  if (device_total_bytes == 0 || budget_bytes >= device_total_bytes) return out;
  std::string_view variable = kFractionVariables[1];
  double fraction = kDefaultMemFraction;
  bool own = false;
  for (const std::string_view name : kFractionVariables) {
    const std::optional<std::string> value = current(name);
    if (!value) continue;
    const std::optional<double> read = read_fraction(*value);
    if (!read) {
      out.note = fmt::format(
          "JAX: {}={} is not a fraction, so XLA's pool is not sized to the budget's card", name,
          *value);
      return out;
    }
    variable = name;
    fraction = *read;
    own = true;
    break;
  }
  // JAX's own total of the device can be over the runtime's: on an H200, 150,109,945,856 against
  // 150,109,880,320 B. Bytes over 6 GiB made XLA's preallocated pool 6 GiB and 2 MiB
  // (6,444,548,096 B) where an 8 GiB card's is 6 GiB. So the share is of the total and 128 KiB
  // (twice that excess, room for the printed fraction's rounding too): measured, the pool of an
  // 8 GiB budget is then 6,442,450,944 B, a card's.
  constexpr double kJaxTotalOver = 128.0 * 1024;
  const double scaled = fraction * static_cast<double>(budget_bytes) /
                        (static_cast<double>(device_total_bytes) + kJaxTotalOver);
  out.set.emplace_back(std::string(variable), fmt::format("{:.9g}", scaled));
  out.note = fmt::format(
      "JAX: XLA's pool sized as on a card of {} ({} of it{}): {}={:.9g} of this device's {}",
      format_bytes(budget_bytes), fmt::format("{:g}", fraction),
      own ? fmt::format(", the program's {}", variable) : ", JAX's default", variable, scaled,
      format_bytes(device_total_bytes));
  return out;
}

namespace {

// Whether the pool is preallocated, by the values JAX itself reads as preallocation off and its
// allocators without a pool.
bool preallocated(const std::function<std::optional<std::string>(std::string_view)>& current) {
  const auto is = [&](std::string_view name, std::initializer_list<std::string_view> values) {
    const std::optional<std::string> value = current(name);
    return value && std::find(values.begin(), values.end(), *value) != values.end();
  };
  return !is("XLA_PYTHON_CLIENT_PREALLOCATE", {"0", "false", "False"}) &&
         !is("XLA_PYTHON_CLIENT_ALLOCATOR", {"platform", "cuda_async"});
}

bool sets_flag(std::string_view flags, std::string_view flag) {
  return flags.find(flag.substr(0, flag.find('='))) != std::string_view::npos;
}

// XLA splits XLA_FLAGS at white space: a folder with a space (or a quote) cannot be said there.
bool plain_path(const std::string& path) {
  return std::none_of(path.begin(), path.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '"' || c == '\'';
  });
}

}  // namespace

std::vector<std::pair<std::string, std::string>> recording_variables(const RecordedRun& run) {
  const std::string flags = run.current("XLA_FLAGS").value_or("");
  std::vector<std::string> added;
  if (run.predicting && preallocated(run.current) && !sets_flag(flags, kTightLimitFlag))
    added.emplace_back(kTightLimitFlag);
  const std::string dump = (run.folder / kDumpFolder).string();
  if (!run.folder.empty() && !sets_flag(flags, kDumpFlag) && plain_path(dump)) {
    // XLA adds to a dump folder: one an earlier run left there (a run folder reused with
    // --force) would lend its modules to this run's diagnosis.
    std::error_code ignored;
    std::filesystem::remove_all(dump, ignored);
    added.push_back(fmt::format("{}={}", kDumpFlag, dump));
  }
  if (added.empty()) return {};
  return {
      {"XLA_FLAGS", fmt::format("{}{}{}", flags, flags.empty() ? "" : " ", fmt::join(added, " "))}};
}

bool is_xla_info_line(std::string_view line, const std::string* previous_log_line) {
  if (previous_log_line != nullptr &&
      (line.empty() || line.starts_with('\t') || line == "*** End stack trace ***"))
    return true;
  // absl's prefix: I, month and day, a time, the thread, the file and line, "] ".
  if (line.size() > 6 && line[0] == 'I' && is_digit(line[1]) && is_digit(line[2]) &&
      is_digit(line[3]) && is_digit(line[4]) && line[5] == ' ') {
    return line.find("] ") != std::string_view::npos;
  }
  // The BFC allocator's Stats block: a word, a colon and a figure padded to column 34.
  constexpr std::array<std::string_view, 9> kStats = {
      "Limit:",    "InUse:",        "MaxInUse:",      "NumAllocs:",       "MaxAllocSize:",
      "Reserved:", "PeakReserved:", "PeakAllocated:", "LargestFreeBlock:"};
  for (const std::string_view word : kStats) {
    if (line.starts_with(word) && line.size() > word.size() + 2 && line[word.size()] == ' ' &&
        line[word.size() + 1] == ' ')
      return true;
  }
  return false;
}

std::optional<std::uint64_t> xla_line_time(std::string_view line) {
  const std::optional<LogLine> log = read_log_line(line);
  if (!log) return std::nullopt;
  return log->t_ns;
}

}  // namespace oomlab::jax
