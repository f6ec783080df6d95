#include "pytorch/exec/library_oom.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "oomlab/units.hpp"
#include "trace/trace.hpp"

namespace oomlab::torch {

std::string library_of(const ProgramMessage& message) {
  if (message.framework != "PyTorch") return message.framework;
  return "a CUDA call outside its allocator";  // PyTorch's CUDA_CHECK: graphs, modules, a JIT
}

std::uint64_t library_room_cap(std::uint64_t allocator_budget) {
  const std::uint64_t headroom = std::max<std::uint64_t>(256_MiB, allocator_budget / 16);
  return allocator_budget > headroom + kDevicePageBytes ? allocator_budget - headroom
                                                        : kDevicePageBytes;
}

// Everything after the last allocation is the exception's unwinding: frees alone. Unless the
// program was refused after it and caught that (a refusal after the last allocation, then the
// library's death): its frees then came before it died, and the state is the trace's end.
std::optional<LibraryOom> library_oom(const trace::Trace& trace, const ProgramMessage& message) {
  std::uint32_t last = trace.demand.last_alloc_at;
  if (last == trace::Event::kNone) return std::nullopt;
  if (trace::ends_at_failure(trace)) last = static_cast<std::uint32_t>(trace.events.size() - 1);
  std::vector<std::uint64_t> slot_bytes(trace.slots, 0);
  std::uint64_t live = 0;
  for (std::uint32_t i = 0; i <= last; ++i) {
    const trace::Event e = trace.events[i];
    if (e.slot == trace::Event::kNone || e.slot >= slot_bytes.size()) continue;
    if (e.op == trace::Op::alloc) {
      live += e.bytes;
      slot_bytes[e.slot] = e.bytes;
    } else if (e.op == trace::Op::free) {
      live -= std::exchange(slot_bytes[e.slot], 0);
    }
  }
  const std::uint64_t reserved = trace::recorded_reserved_before(trace, last + 1);
  return LibraryOom{.library = library_of(message),
                    .entry = trace.events[last].index,
                    .allocated_bytes = live,
                    .cached_free_bytes = reserved > live ? reserved - live : 0};
}

std::string library_reproduction(const LibraryOom& l, std::uint64_t budget) {
  return fmt::format(
      "not an OOM of PyTorch's allocator: the program died in {} beside it, while the allocator "
      "held {} allocated and {} cached-free (its snapshot after entry {}); the model replays "
      "what the allocator was asked for up to there, which fits the model's budget ({}): the "
      "library's own memory is not in the trace",
      l.library, format_bytes(l.allocated_bytes), format_bytes(l.cached_free_bytes),
      format_count(l.entry), format_bytes(budget));
}

std::string library_caveat(const LibraryOom& l) {
  return fmt::format(
      "the trace stops where the program died in {} (after entry {}): what it would have asked "
      "for after it is not in the trace, so every frontier and every 'fits' read from it is a "
      "lower bound for the whole job",
      l.library, format_count(l.entry));
}

// A library beside the allocator ran out: the remedies leave it room (expandable segments hold
// less cached-free memory; a cap on the allocator keeps it under the budget less a headroom).
void advise_library_room(ProgramModel& m) {
  const LibraryOom& l = *m.library_oom;
  const std::uint64_t cap = library_room_cap(m.budget_bytes);
  m.advice = fmt::format(
      "leave {} room beside PyTorch's allocator: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
      "(less memory cached but unallocated), or cap the allocator at {} "
      "(torch.cuda.set_per_process_memory_fraction) so that it frees its cache before it takes "
      "the last {}, or a smaller batch; --check-remedy reruns the program to see which holds",
      l.library, format_bytes(cap), format_bytes(m.budget_bytes - cap));
  for (std::size_t i = 0; i < m.whatif.size(); ++i) {
    if (m.whatif[i].settings == "expandable_segments:True" && !m.whatif[i].as_ran) m.advised = i;
  }
}

std::string library_evidence(const LibraryOom& l, std::uint64_t budget) {
  return fmt::format(
      "{} could not get device memory beside PyTorch's allocator, which held {} allocated and "
      "{} cached-free of the {} budget",
      l.library, format_bytes(l.allocated_bytes), format_bytes(l.cached_free_bytes),
      format_bytes(budget));
}

}  // namespace oomlab::torch
