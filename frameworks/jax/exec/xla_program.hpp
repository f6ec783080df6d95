// What exec does to a JAX program so that a budget is a card for it, and so that XLA says what
// its allocator held at an OOM: the pool's fraction scaled to the card (JAX sizes XLA's BFC pool,
// and the memory limit XLA compiles under, from the device's total memory), and XLA's INFO log
// (where the BFC allocator prints its chunk map and pool summary) turned on and kept apart.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oomlab/framework.hpp"

namespace oomlab::jax {

// JAX's default share of the device's total memory for XLA's pool.
inline constexpr double kDefaultMemFraction = 0.75;

// XLA_PYTHON_CLIENT_MEM_FRACTION (or XLA_CLIENT_MEM_FRACTION, which JAX reads first) as the
// program has it, else JAX's default, times budget / total (the total taken a hair over, so that
// XLA's pool is the one a card of `budget_bytes` gets: xla_program.cpp says why). Nothing set (and
// a note saying why) when the program's own value is not a fraction JAX would take.
[[nodiscard]] CardSizing::Variables card_variables(
    std::uint64_t budget_bytes, std::uint64_t device_total_bytes,
    const std::function<std::optional<std::string>(std::string_view)>& current);

// The flag a run a search predicts from is compiled with (ProgramLog::predicting): XLA's
// scheduler and rematerialisation aim the step's temp at the pool's limit less the step's inputs
// and outputs, times this factor in percent; at 1 the step holds the least XLA can make it hold.
inline constexpr std::string_view kTightLimitFlag = "--xla_gpu_memory_limit_slop_factor=1";

// fit exec's second run for XLA (ProgramModelling::far_second_run): the largest batch the first
// run, grown in proportion, fits, where that is at least this. Under the tight limit a step's
// temp at the smallest batches is XLA's choice around what does not grow, off the line the large
// batches are on; measured on an H200 at 8 GiB: a ViT's step held 42.0 MiB at batch 1 and
// 563.5 MiB at 12, where 123 asked 5.51 GiB (45.8 MiB a batch from 12), and the prediction from
// 1 and 12 was 118 where 122 completes; an MLP-Mixer's from 1 and 21 was 243 (which completes,
// an island: 190 to 242 fail), where from 1 and 2 it was 134. The far run must be far: with
// --remat, the lm's from 1 and 3 was 8, from 1 and 2 it is 11, exact.
inline constexpr std::uint64_t kFarSecondRun = 8;

// Where XLA writes what it compiled (its dump: each step's HLO with the program's lines, its
// buffer assignment and its buffers' live ranges), a folder beside the log.
inline constexpr std::string_view kDumpFlag = "--xla_dump_to";
inline constexpr std::string_view kDumpFolder = "xla-dump";

// ProgramLog::recording: XLA_FLAGS with, after the program's own flags, the dump into the log's
// folder (kDumpFolder, emptied of what an earlier run left there; nothing where the program
// dumps itself, or where the folder's name has a space, which XLA_FLAGS cannot hold), and on a run
// a search predicts from kTightLimitFlag (nothing where the program sets that factor itself, or
// where the pool is not preallocated: XLA_PYTHON_CLIENT_PREALLOCATE=false,
// XLA_PYTHON_CLIENT_ALLOCATOR=platform or cuda_async). With the pool preallocated a run under the
// tight limit completes where the run under the pool's limit does (XLA fits the step to that limit
// where its smallest form fits), while a pool grown region by region may be cut short by the larger
// step it is given room for.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> recording_variables(
    const RecordedRun& run);

// A line of XLA's (absl's) INFO log, "I1129 01:46:30.394064  511 bfc_allocator.cc:1385] ...",
// one of the lines of the BFC allocator's "Stats:" block ("InUse:   1.50GiB"), or of the stack
// a "[mem-debug]" line of its VLOG 4 goes on with ("\tPyObject_Vectorcall" up to "*** End stack
// trace ***" and the blank line after it): after a line of the log (`previous_log_line`, null when
// the line before was the program's own), a blank line, a tab-indented one or the stack's end.
// (Other threads' lines come between a stack's lines, so nothing more of the stack is asked.)
[[nodiscard]] bool is_xla_info_line(std::string_view line, const std::string* previous_log_line);

// ProgramLog::line_time: the time of day of a line with absl's or TensorFlow's prefix (XLA's
// INFO lines and its warnings, which reach stderr); none for other lines.
[[nodiscard]] std::optional<std::uint64_t> xla_line_time(std::string_view line);

}  // namespace oomlab::jax
