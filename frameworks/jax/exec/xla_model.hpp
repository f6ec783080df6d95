// What the model of XLA's allocator (the backend `xla`) answers of a JAX program exec ran, from
// the allocator's log the run kept (xla-log.txt, the trace format `xla`): the memory the process
// held beside XLA's pool, whether the model fails where the program did on a card of the run's
// budget, each of JAX's settings there (its defaults, XLA_PYTHON_CLIENT_PREALLOCATE=false,
// XLA_PYTHON_CLIENT_ALLOCATOR=platform, a larger XLA_PYTHON_CLIENT_MEM_FRACTION where the process
// leaves room for one) with the smallest card for the whole process under it, the setting to use,
// the step that asked and what it holds at its peak by the program's lines (XLA's dump beside the
// log, jax/trace/xla_dump.hpp), --check-remedy's rerun with it, and the searches' predictions from
// two runs' logs. XLA compiles a program's step for the pool it is given: a log recorded on one
// card answers for cards near it (the rows say so where they answer for a smaller one).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "exec/exec_fit.hpp"
#include "run/run_result.hpp"

namespace oomlab::jax {

// run.program's first snapshot (the kept log) into run.models; a log that cannot be read, or a
// stop, becomes a note of the run.
void model_xla_run(RunResult& run, const std::atomic<bool>* stop);

// The program run again at the same budget with the setting the model named: "" when it ran,
// else why it did not.
[[nodiscard]] std::string check_xla_remedy(const ExecConfig& config,
                                           std::span<ExecDevices* const> gpus, RunResult& run);
[[nodiscard]] std::string xla_remedy_line(const RemedyCheck& check);

// From two runs' logs: the largest value whose made trace completes on a card of the budget (the
// question's budget is the card less what the process held beside the pool), and the smallest
// such card for a value.
[[nodiscard]] FitResult fit_xla_series(const SeriesQuestion& question);
[[nodiscard]] std::optional<std::uint64_t> frontier_xla_series(const SeriesQuestion& question);

}  // namespace oomlab::jax
