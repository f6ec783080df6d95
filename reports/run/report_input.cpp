#include "reports/run/report_input.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// nlohmann's message without its "[json.exception.parse_error.101] parse error " prefix.
std::string parse_error_text(const std::string& what) {
  std::string text = what;
  if (const auto bracket = text.find("] ");
      text.starts_with("[json.exception") && bracket != std::string::npos) {
    text = text.substr(bracket + 2);
  }
  if (text.starts_with("parse error ")) text = text.substr(12);
  return text;
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::input, fmt::format("{}: no such file", path.string()));
  }
  if (!std::filesystem::is_regular_file(path, ec))  // a FIFO would block the read
    throw Error(ErrorKind::input, fmt::format("{}: not a regular file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::input, fmt::format("{}: cannot be read", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not valid JSON {}", path.string(), parse_error_text(e.what())));
  }
}

JsonFields::JsonFields(const nlohmann::json& object, std::filesystem::path file, std::string where)
    : object_(object), file_(std::move(file)), where_(std::move(where)) {
  if (!object_.is_object()) fail("", "an object");
}

const nlohmann::json* JsonFields::find(const std::string& key) const {
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonFields::path_of(const std::string& key) const {
  if (where_.empty()) return key;
  if (key.empty()) return where_;
  return where_ + "." + key;
}

void JsonFields::fail(const std::string& key, const std::string& what) const {
  const std::string field = path_of(key);
  if (field.empty()) {
    throw Error(ErrorKind::input,
                fmt::format("{}: the top level must be {}", file_.string(), what));
  }
  throw Error(ErrorKind::input, fmt::format("{}: '{}' must be {}", file_.string(), field, what));
}

bool JsonFields::has(const std::string& key) const {
  return find(key) != nullptr;
}

std::string JsonFields::text(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr || !value->is_string()) fail(key, "a string");
  return value->get<std::string>();
}

std::string JsonFields::optional_text(const std::string& key) const {
  return has(key) ? text(key) : std::string();
}

std::uint64_t JsonFields::count(const std::string& key) const {
  const std::optional<std::uint64_t> value = optional_count(key);
  if (!value) fail(key, "a whole number >= 0");
  return *value;
}

std::optional<std::uint64_t> JsonFields::optional_count(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned()) return value->get<std::uint64_t>();
  if (value->is_number_integer() && value->get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value->get<std::int64_t>());
  }
  fail(key, "a whole number >= 0");
}

std::optional<std::int64_t> JsonFields::optional_integer(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer() && !value->is_number_unsigned()) return value->get<std::int64_t>();
  if (value->is_number_unsigned() && value->get<std::uint64_t>() <= INT64_MAX) {
    return static_cast<std::int64_t>(value->get<std::uint64_t>());
  }
  fail(key, "a whole number");
}

std::optional<double> JsonFields::optional_number(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) fail(key, "a number");
  return value->get<double>();
}

std::vector<std::string> JsonFields::texts(const std::string& key) const {
  std::vector<std::string> out;
  const nlohmann::json* value = find(key);
  if (value == nullptr) return out;
  if (!value->is_array()) fail(key, "a list of strings");
  for (const nlohmann::json& item : *value) {
    if (!item.is_string()) fail(key, "a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<bool> JsonFields::optional_flag(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) fail(key, "true or false");
  return value->get<bool>();
}

bool JsonFields::flag(const std::string& key) const {
  return optional_flag(key).value_or(false);
}

std::vector<std::int64_t> JsonFields::integers(const std::string& key) const {
  std::vector<std::int64_t> out;
  const nlohmann::json* value = find(key);
  if (value == nullptr) return out;
  if (!value->is_array()) fail(key, "a list of whole numbers");
  for (const nlohmann::json& item : *value) {
    if (!item.is_number_integer()) fail(key, "a list of whole numbers");
    out.push_back(item.get<std::int64_t>());
  }
  return out;
}

JsonFields JsonFields::object(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr || !value->is_object()) fail(key, "an object");
  return {*value, file_, path_of(key)};
}

std::optional<JsonFields> JsonFields::optional_object(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return object(key);
}

std::vector<JsonFields> JsonFields::objects(const std::string& key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr || !value->is_array()) fail(key, "a list of objects");
  std::vector<JsonFields> out;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const std::string where = fmt::format("{}[{}]", path_of(key), i);
    if (!(*value)[i].is_object()) {
      throw Error(ErrorKind::input,
                  fmt::format("{}: '{}' must be an object", file_.string(), where));
    }
    out.emplace_back((*value)[i], file_, where);
  }
  return out;
}

std::string display_value(const std::string& name, const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  const bool is_bytes = name.ends_with("_bytes") || name == "bytes";
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0)) {
    const auto n = value.get<std::uint64_t>();
    return is_bytes ? format_bytes(n) : format_count(n);
  }
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number()) {
    const double v = value.get<double>();
    if (is_bytes && v >= 0 && v < 1.8e19) return format_bytes(static_cast<std::uint64_t>(v));
    return std::isfinite(v) ? fmt::format("{:.4g}", v) : fmt::format("{}", v);
  }
  return value.dump();
}

}  // namespace oomlab
