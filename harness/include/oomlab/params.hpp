// Typed parameters: scenarios declare them (ParamSpec), backends declare their options the same
// way, the CLI turns "key=value" text into these types, and code below the CLI reads them typed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oomlab/units.hpp"

namespace oomlab {

enum class ParamType : std::uint8_t {
  bytes,     // 64KiB, 1.5GB, 512; "max" too where ParamDef::accepts_max
  integer,   // 32, -1
  real,      // 0.5
  fraction,  // 1/32, 0.25
  flag,      // on|off|true|false|1|0
  choice,    // one of ParamDef::choices
  choices,   // a comma-separated list of ParamDef::choices, in the user's order, no repeats
  text,      // free text (file paths)
};

using ChoiceList = std::vector<std::string>;
using ParamValue =
    std::variant<Bytes, std::int64_t, double, Fraction, bool, std::string, ChoiceList>;

struct ParamDef {
  std::string name;
  ParamType type = ParamType::text;
  ParamValue default_value;
  std::string help;
  std::vector<std::string> choices;         // for ParamType::choice and ParamType::choices
  bool accepts_max = false;                 // for ParamType::bytes: "max" means the largest value
  std::optional<std::int64_t> min_integer;  // for ParamType::integer
};

using ParamSpec = std::vector<ParamDef>;

[[nodiscard]] std::string_view to_string(ParamType type);
// The value as a user would write it: "64KiB", "1/32", "on", "interleaved".
[[nodiscard]] std::string format_param_value(const ParamValue& value);

// The typed values of one scenario's (or backend's) parameters: every declared name has a value,
// the default unless the user gave one. Reading a name that was not declared, or reading it as
// the wrong type, is a bug in the caller and throws std::logic_error.
class Params {
 public:
  Params() = default;
  // Starts from the defaults of `spec`.
  explicit Params(const ParamSpec& spec);

  void set(const std::string& name, ParamValue value);

  [[nodiscard]] std::uint64_t bytes(std::string_view name) const;
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] Fraction fraction(std::string_view name) const;
  [[nodiscard]] bool flag(std::string_view name) const;
  [[nodiscard]] const std::string& choice(std::string_view name) const;
  [[nodiscard]] const ChoiceList& choices(std::string_view name) const;
  [[nodiscard]] const std::string& text(std::string_view name) const;

  [[nodiscard]] bool was_set(std::string_view name) const;
  [[nodiscard]] const std::map<std::string, ParamValue, std::less<>>& values() const {
    return values_;
  }

 private:
  [[nodiscard]] const ParamValue& at(std::string_view name) const;

  std::map<std::string, ParamValue, std::less<>> values_;
  std::vector<std::string> set_by_user_;
};

}  // namespace oomlab
