// soak.json (schema oomlab.soak.v1) and the soak's lines for people: `oomlab run --repeat N`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "record/formats.hpp"
#include "run/soak.hpp"

namespace oomlab {

// What a soak may leave behind and still pass: resident memory growth after the first tenth of
// the cycles, and device free memory short after any cycle (the harness's own 2 MiB).
inline constexpr std::int64_t kSoakRssGrowthLimit = 4LL << 20U;
inline constexpr std::int64_t kSoakDeviceShortfallLimit = 2LL << 20U;

// The verdicts: empty when everything came back each time.
[[nodiscard]] std::vector<std::string> soak_problems(const SoakResult& soak);

[[nodiscard]] nlohmann::ordered_json soak_json(const SoakResult& soak, std::uint32_t asked);
[[nodiscard]] std::string soak_text(const SoakResult& soak, std::uint32_t asked);

}  // namespace oomlab
