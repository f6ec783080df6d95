// How much of a run's memory is checked for corruption (run/integrity.hpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace oomlab {

enum class VerifyMode : std::uint8_t {
  off,     // nothing filled, nothing checked
  sample,  // one allocation in Integrity::kSampleEvery filled, and every large one
  all,     // every allocation filled
};
[[nodiscard]] std::string_view to_string(VerifyMode mode);

}  // namespace oomlab
