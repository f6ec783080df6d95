// `oomlab exec --check-remedy`: the model's claim checked against the program itself. After an
// OOM whose advice names a setting the model shows completing, the program runs again at the
// same budget with PYTORCH_CUDA_ALLOC_CONF set to that setting's exact string, and the record
// says whether it completed: a claim that did not hold is a finding, never hidden.
#pragma once

#include <span>
#include <string>

#include "exec/exec_run.hpp"

namespace oomlab::torch {

inline constexpr const char* kAllocConfVariable = "PYTORCH_CUDA_ALLOC_CONF";

// Runs the check into result.models.front().remedy_check (its rerun's files, with a run folder,
// in <folder>/remedy_check/). PyTorch reads one variable and the model's row is a whole setting
// set, so the rerun's PYTORCH_CUDA_ALLOC_CONF replaces the one oomlab was given (said in
// `replaced`). Returns why nothing was checked ("" when it was). With two GPUs or more, a library's
// OOM has both its reruns at once (the advised setting, the cap), the outcome and the folder as
// one after the other leaves them. Throws what run_exec throws.
[[nodiscard]] std::string check_remedy(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                                       RunResult& result);

// One line for the summary: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True at the same
// budget: completed — the model's claim held".
[[nodiscard]] std::string remedy_check_line(const RemedyCheck& check);

}  // namespace oomlab::torch
