// `oomlab whatif`'s outputs: the answer line, the table of settings (the same cells for the
// terminal, Markdown and HTML), and whatif.json (schema oomlab.whatif.v1; field names are fixed,
// fields may be added).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pytorch/settings/whatif.hpp"
#include "record/formats.hpp"

namespace oomlab::torch {

// One line, leading: the setting that fits in the least memory against native, and, at the
// budget, which settings run out of memory and which fit. Never recommends one that does not.
[[nodiscard]] std::string whatif_answer(const WhatIfResult& result);
// "what if NAME (N entries) had run with other settings? budget ..."
[[nodiscard]] std::string whatif_heading(const WhatIfResult& result);
// What the table is of: the snapshot's name, or for a trace made from a series
// "snap_b{batch}.pickle at batch=16 (made from batch=1,2; predicted, not run)".
[[nodiscard]] std::string whatif_subject(const WhatIfResult& result);

struct WhatIfTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // one per setting, in the result's order
};
[[nodiscard]] WhatIfTable whatif_table(const WhatIfResult& result);

// For the terminal: the answer, the heading, the aligned table and the notes.
[[nodiscard]] std::string whatif_text(const WhatIfResult& result);
[[nodiscard]] nlohmann::ordered_json whatif_json(const WhatIfResult& result);
[[nodiscard]] std::string whatif_markdown(const WhatIfResult& result);
// Self-contained, like the run reports: the answer and the table lead.
[[nodiscard]] std::string whatif_html(const WhatIfResult& result);
// whatif.json read back (`oomlab report` of a whatif folder): the result its pages are made from.
// Error(input) naming the file and the field when it is not one.
[[nodiscard]] WhatIfResult read_whatif(const std::filesystem::path& path);

}  // namespace oomlab::torch
