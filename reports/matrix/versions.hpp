// Versions as drivers and frameworks spell them ("580.159.04", "2.11.0+cu130"), ordered as
// versions: runs of digits compare as numbers, so 580.65.06 comes before 580.159.04.
#pragma once

#include <string_view>

namespace oomlab {

// Negative when `a` is the older version, 0 when they are the same, positive when `a` is newer.
// Digit runs compare as numbers (leading zeros aside), everything between them as text.
[[nodiscard]] int compare_versions(std::string_view a, std::string_view b);

}  // namespace oomlab
