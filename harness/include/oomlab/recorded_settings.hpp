// The settings of the allocator a replayed program ran with, as its trace recorded them, spelled
// as the options of the backend that models that allocator (the names and types of its
// BackendInfo::options): the backend takes them as its defaults, and what the user asks for wins.
// The trace format that read them knows whose they are; the engine only carries them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "oomlab/params.hpp"

namespace oomlab {

struct RecordedSettings {
  // The backend whose options these are ("": the first backend that models a recorded
  // allocator, BackendInfo::auto_notice).
  std::string backend;
  // The options the trace recorded, by the backend's own names; a value may be of a type of its
  // own where the backend reads more from a trace than a user can ask for.
  std::map<std::string, ParamValue, std::less<>> options;

  // The option's recorded value as a T; none where it was not recorded (or not as a T).
  template <typename T>
  [[nodiscard]] std::optional<T> get(std::string_view name) const {
    const auto it = options.find(name);
    if (it == options.end()) return std::nullopt;
    const T* value = std::get_if<T>(&it->second);
    return value != nullptr ? std::optional<T>(*value) : std::nullopt;
  }
  bool operator==(const RecordedSettings&) const = default;
};

}  // namespace oomlab
