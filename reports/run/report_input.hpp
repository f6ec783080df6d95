// Reading the JSON that runs and matrices wrote (summary.json, matrix.json) into typed values,
// with one-line errors that name the file, and the field or the line, that is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace oomlab {

// The whole file parsed; Error(input) "FILE: not valid JSON at line L, column C: ..." otherwise.
[[nodiscard]] nlohmann::json read_json_file(const std::filesystem::path& path);

// One JSON object of a file, read field by field. Each getter throws Error(input) naming the
// file and the field's dotted path when the field is missing or of the wrong type.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::filesystem::path file, std::string where = "");

  [[nodiscard]] bool has(const std::string& key) const;  // present and not null
  [[nodiscard]] std::string text(const std::string& key) const;
  [[nodiscard]] std::string optional_text(const std::string& key) const;  // "" when absent/null
  [[nodiscard]] std::uint64_t count(const std::string& key) const;
  [[nodiscard]] std::optional<std::uint64_t> optional_count(const std::string& key) const;
  [[nodiscard]] std::optional<std::int64_t> optional_integer(const std::string& key) const;
  [[nodiscard]] std::optional<double> optional_number(const std::string& key) const;
  [[nodiscard]] std::vector<std::string> texts(const std::string& key) const;  // [] when absent
  [[nodiscard]] std::optional<bool> optional_flag(const std::string& key) const;
  [[nodiscard]] bool flag(const std::string& key) const;  // false when absent or null
  [[nodiscard]] std::vector<std::int64_t> integers(const std::string& key) const;  // [] absent
  [[nodiscard]] JsonFields object(const std::string& key) const;
  [[nodiscard]] std::optional<JsonFields> optional_object(const std::string& key) const;
  [[nodiscard]] std::vector<JsonFields> objects(const std::string& key) const;
  [[nodiscard]] const nlohmann::json& raw() const { return object_; }
  [[nodiscard]] const std::filesystem::path& file() const { return file_; }

  // Error(input) "FILE: 'a.b' must be WHAT".
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  [[nodiscard]] const nlohmann::json* find(const std::string& key) const;
  [[nodiscard]] std::string path_of(const std::string& key) const;

  const nlohmann::json& object_;
  std::filesystem::path file_;
  std::string where_;
};

// A value of a JSON object shown as a person reads it: strings bare, *_bytes as "1.50 GiB".
[[nodiscard]] std::string display_value(const std::string& name, const nlohmann::json& value);

}  // namespace oomlab
