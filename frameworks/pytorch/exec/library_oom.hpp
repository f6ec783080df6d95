// An OOM beside PyTorch's allocator: a library (cuBLAS, cuDNN, NCCL, ...) or a CUDA call of
// PyTorch's own that could not get device memory while the allocator held the budget. Its
// snapshot holds no refusal and stops where the program died; what the model says of it, and
// the remedies that leave the library room.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "oomlab/trace.hpp"
#include "run/run_result.hpp"

namespace oomlab::torch {

// The library named for an OOM beside PyTorch's allocator: the message's (cuBLAS, cuDNN, NCCL,
// ...), or, for PyTorch's own "CUDA error: out of memory", a CUDA call outside its allocator.
[[nodiscard]] std::string library_of(const ProgramMessage& message);

// The cap on PyTorch's allocator that leaves a library beside it room: the allocator's budget
// less a headroom (1/16 of it, at least 256 MiB).
[[nodiscard]] std::uint64_t library_room_cap(std::uint64_t allocator_budget);

// What PyTorch's allocator held right after its last allocation in `trace`: the moment a
// program that died in a library beside it was in. None for a trace without allocations.
[[nodiscard]] std::optional<LibraryOom> library_oom(const trace::Trace& trace,
                                                    const ProgramMessage& message);

// The model's reproduction line, the trace's caveat and the OOM's evidence, in words.
[[nodiscard]] std::string library_reproduction(const LibraryOom& l, std::uint64_t budget);
[[nodiscard]] std::string library_caveat(const LibraryOom& l);
[[nodiscard]] std::string library_evidence(const LibraryOom& l, std::uint64_t budget);

// The advice (expandable segments, a cap on the allocator, a smaller batch) and the row
// --check-remedy tries first: expandable segments, unless the program ran with them.
void advise_library_room(ProgramModel& m);

}  // namespace oomlab::torch
