// What XLA compiled, from its dump (XLA_FLAGS=--xla_dump_to=FOLDER, which exec sets while it
// records a JAX program): the step whose temp buffer the pool refused, where the program called
// it, and what its buffers hold at its peak, by the program's lines.
//
// For each compiled module XLA writes PREFIX.txt (its HLO after optimisation: each instruction's
// metadata names its op and a stack frame of the program, whose files, functions and lines are
// tables at the top), PREFIX-buffer-assignment.txt (the buffers it packs into allocations, one of
// them the "preallocated-temp" that the step asks the pool for when it runs) and
// PREFIX-live-range.txt (its buffers' live ranges and the ones "Live ranges at N (peak)").
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/trace.hpp"

namespace oomlab::jax {

struct CompiledStep {
  std::string name;           // the module's, "jit_train_step"
  std::filesystem::path hlo;  // its HLO text, beside which its other files are
  std::uint64_t temp_bytes = 0;
  std::uint64_t peak_bytes = 0;  // its buffers live at its peak: arguments, temps, outputs
  // Where the program called it, innermost first, as a traceback names frames:
  // "main (/home/u/lm.py:96)"; empty where its metadata does not say.
  std::vector<std::string> call_frames;
  // Its buffers live at its peak, by the program's line that made each (an argument by its
  // name), the largest first, `most` of them.
  std::vector<trace::MemoryHolder> holders;
};

// The step in the dump at `folder` whose temp buffer is `temp_bytes` (the request the pool
// refused), `executable` first where more than one is ("jit_train_step", from the OOM's
// message; "" none); none where no module has such a temp or its files are not as read here.
[[nodiscard]] std::optional<CompiledStep> compiled_step(const std::filesystem::path& folder,
                                                        std::uint64_t temp_bytes,
                                                        const std::string& executable,
                                                        std::size_t most);

// Leaves in the dump at `folder` only the files compiled_step reads of `step` (none: the folder
// goes), so that a run's record keeps what its diagnosis is read from and nothing else.
void keep_in_dump(const std::filesystem::path& folder, const CompiledStep* step);

}  // namespace oomlab::jax
