// Turning user text into oomlab's types: the one place sizes, budgets, fractions and parameter
// values are parsed. Every function throws Error(usage) with a one-line message that names the
// value and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/params.hpp"
#include "oomlab/units.hpp"
#include "run/runner.hpp"
#include "run/verify_mode.hpp"

namespace oomlab {
struct SettingsSpelling;
}  // namespace oomlab

namespace oomlab::cli {

// 512, 64KiB, 8GiB, 1.5GB, 8G, "8 GiB". IEC units (KiB, K) are powers of 1024, SI units (KB) of
// 1000; units are case-insensitive. Exact: 1.5GB is 1,500,000,000 bytes.
[[nodiscard]] Bytes parse_size(std::string_view text);
// 10%, 12.5% (0 < p <= 100).
[[nodiscard]] Percent parse_percent(std::string_view text);
// SIZE | N% | all | a card's name (T4, A100-80GB, H100: device/cards.hpp); never zero. A size
// that is not a whole number of bytes (1.9GiB) is rounded to the nearest 2 MiB page.
[[nodiscard]] BudgetRequest parse_budget(std::string_view text);
// parse_budget's reading, and the notes a user should see about it: what a fractional size was
// rounded to, and what an SI size (8GB: 8,000,000,000 B) came to, in case the IEC one was meant.
struct BudgetReading {
  BudgetRequest request;
  std::vector<std::string> notes;
};
[[nodiscard]] BudgetReading read_budget(std::string_view text);
// 1/32, 0.25 (0..1).
[[nodiscard]] Fraction parse_fraction(std::string_view text);
[[nodiscard]] bool parse_flag(std::string_view text);
[[nodiscard]] std::int64_t parse_integer(std::string_view text);
[[nodiscard]] std::uint64_t parse_unsigned(std::string_view text);
// Whether `text` is a whole number under 1 ("0", "-4"): never a value a search doubles from or a
// series of snapshots is made along (a batch size), which the caller refuses naming its flag.
[[nodiscard]] bool whole_number_below_one(std::string_view text);
[[nodiscard]] double parse_real(std::string_view text);
// A CUDA device's index: a whole number up to 1024.
[[nodiscard]] int parse_device_index(std::string_view text);

// The value of one declared parameter; `context` names where it came from ("--param block").
[[nodiscard]] ParamValue parse_param_value(const ParamDef& def, std::string_view text);

// "key=value" pairs (from repeated --param, or the comma list of an allocator spec) applied over
// the defaults of `spec`. `owner` names whose parameters they are, for messages.
[[nodiscard]] Params parse_params(const ParamSpec& spec,
                                  const std::vector<std::string>& assignments,
                                  std::string_view owner, std::string_view flag);

struct AllocatorChoice {
  BackendKind kind;
  Params options;
};
// "async", "async:release_threshold=0,reuse_opportunistic=off"; a backend whose framework spells
// its settings its own way takes that spelling too (Framework::settings_spelling).
[[nodiscard]] AllocatorChoice parse_allocator(std::string_view text);

// The framework's spelling of `backend`'s settings; null when none spells them its own way.
[[nodiscard]] const SettingsSpelling* settings_spelling_of(std::string_view backend);
// The spelling the engine's commands take a flag for (--alloc-conf); null: no framework has one.
[[nodiscard]] const SettingsSpelling* settings_spelling();

// all | sample | off
[[nodiscard]] VerifyMode parse_verify_mode(std::string_view text);

// The candidate closest to `input` by edit distance, or "" when none is close enough.
[[nodiscard]] std::string closest_name(std::string_view input,
                                       const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
[[nodiscard]] std::string did_you_mean(std::string_view input,
                                       const std::vector<std::string>& candidates);

}  // namespace oomlab::cli
