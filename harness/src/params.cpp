#include "oomlab/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

namespace oomlab {

std::string_view to_string(ParamType type) {
  switch (type) {
    case ParamType::bytes:
      return "size";
    case ParamType::integer:
      return "integer";
    case ParamType::real:
      return "number";
    case ParamType::fraction:
      return "fraction";
    case ParamType::flag:
      return "on|off";
    case ParamType::choice:
      return "choice";
    case ParamType::choices:
      return "list";
    case ParamType::text:
      return "text";
  }
  return "?";
}

namespace {

// The shortest exact spelling: 64KiB rather than 65536, 1.5GiB stays 1536MiB.
std::string format_size_exact(std::uint64_t bytes) {
  if (bytes == UINT64_MAX) return "max";
  static constexpr std::array<std::pair<std::uint64_t, const char*>, 4> kUnits = {
      {{1ULL << 40U, "TiB"}, {1ULL << 30U, "GiB"}, {1ULL << 20U, "MiB"}, {1ULL << 10U, "KiB"}}};
  for (const auto& [unit, suffix] : kUnits) {
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
  }
  return std::to_string(bytes);
}

struct ValueFormatter {
  std::string operator()(Bytes b) const { return format_size_exact(b.value); }
  std::string operator()(std::int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const { return fmt::format("{}", d); }
  std::string operator()(Fraction f) const { return format_fraction(f); }
  std::string operator()(bool b) const { return b ? "on" : "off"; }
  std::string operator()(const std::string& s) const { return s; }
  std::string operator()(const ChoiceList& list) const {
    return fmt::format("{}", fmt::join(list, ","));
  }
};

}  // namespace

std::string format_param_value(const ParamValue& value) {
  return std::visit(ValueFormatter{}, value);
}

Params::Params(const ParamSpec& spec) {
  for (const auto& def : spec)
    values_.emplace(def.name, def.default_value);
}

void Params::set(const std::string& name, ParamValue value) {
  values_[name] = std::move(value);
  if (std::find(set_by_user_.begin(), set_by_user_.end(), name) == set_by_user_.end()) {
    set_by_user_.push_back(name);
  }
}

bool Params::was_set(std::string_view name) const {
  return std::find(set_by_user_.begin(), set_by_user_.end(), name) != set_by_user_.end();
}

const ParamValue& Params::at(std::string_view name) const {
  const auto it = values_.find(name);
  if (it == values_.end())
    throw std::logic_error(fmt::format("parameter '{}' was not declared", name));
  return it->second;
}

namespace {
template <typename T>
const T& get_as(const ParamValue& v, std::string_view name) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw std::logic_error(fmt::format("parameter '{}' read as the wrong type", name));
}
}  // namespace

std::uint64_t Params::bytes(std::string_view name) const {
  return get_as<Bytes>(at(name), name).value;
}
std::int64_t Params::integer(std::string_view name) const {
  return get_as<std::int64_t>(at(name), name);
}
double Params::real(std::string_view name) const {
  return get_as<double>(at(name), name);
}
Fraction Params::fraction(std::string_view name) const {
  return get_as<Fraction>(at(name), name);
}
bool Params::flag(std::string_view name) const {
  return get_as<bool>(at(name), name);
}
const ChoiceList& Params::choices(std::string_view name) const {
  return get_as<ChoiceList>(at(name), name);
}

const std::string& Params::choice(std::string_view name) const {
  return get_as<std::string>(at(name), name);
}
const std::string& Params::text(std::string_view name) const {
  return get_as<std::string>(at(name), name);
}

}  // namespace oomlab
