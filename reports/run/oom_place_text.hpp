// An OOM's place in the user's code and what filled memory then, in the lines of the console
// summary (`where`, `held by`), written once for `run` and `exec` alike.
#pragma once

#include <string>
#include <vector>

#include "reports/writers/report_content.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// "where      generate (sd_pipeline.py:52): images = vae.decode(latents).sample", then the
// library frames below it; for a program OOM with nothing recorded, why and how to record it.
[[nodiscard]] std::string oom_where_lines(const OomRecord& oom, bool program_run);

// "held by    4.21 GiB in 12 blocks · forward (diffusers/models/upsampling.py)", the largest
// first (none without holders).
[[nodiscard]] std::string oom_holder_lines(const OomRecord& oom);

// The user's frame, its code and the frames below it, in one line for the reports.
[[nodiscard]] std::string oom_where_text(const OomRecord& oom);

// What filled memory at the OOM, as the report's rows: live bytes by the frame that allocated
// them, largest first.
[[nodiscard]] std::vector<ReportRow> holder_rows(const OomRecord& oom);

}  // namespace oomlab
