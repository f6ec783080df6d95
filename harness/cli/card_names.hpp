// A named card (device/cards.hpp) as people type it: any case, with or without '-' and spaces
// ("h100 80gb", "A100-80GB", "rtx4090"), and a card sold in one size by its model alone ("H100").
#pragma once

#include <string_view>

#include "device/cards.hpp"

namespace oomlab::cli {

// The card, or null when no card (or more than one: "A100") goes by that name.
[[nodiscard]] const Card* card_by_name(std::string_view text);

}  // namespace oomlab::cli
