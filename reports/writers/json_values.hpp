// Small pieces every JSON writer of reports/ shares: an optional written as its value or null.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace oomlab {

template <typename T>
[[nodiscard]] nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace oomlab
