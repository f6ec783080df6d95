// One row of events.csv, in memory: 64 bytes, written on the hot path with no allocation.
#pragma once

#include <cstdint>
#include <string_view>

#include "oomlab/allocator.hpp"

namespace oomlab {

// sample: a program's device memory as `exec` read it (no request of its own).
enum class Op : std::uint8_t { alloc, free, oom, probe, mark, sample };

struct Event {
  std::uint64_t t_ns;   // since the run started
  std::uint64_t bytes;  // requested
  std::uint64_t ptr;
  std::uint64_t stream;
  std::uint64_t live_bytes;      // after the event
  std::uint64_t reserved_bytes;  // after the event, as the backend last knew it
  std::uint64_t step;
  std::uint32_t phase;   // index into the run's PhaseTable
  std::uint16_t thread;  // small per-process thread index
  Op op;
  AllocStatus status;
};
static_assert(sizeof(Event) == 64, "an event must stay one cache line");

[[nodiscard]] constexpr std::string_view to_string(Op op) {
  switch (op) {
    case Op::alloc:
      return "alloc";
    case Op::free:
      return "free";
    case Op::oom:
      return "oom";
    case Op::probe:
      return "probe";
    case Op::mark:
      return "mark";
    case Op::sample:
      return "sample";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(AllocStatus status) {
  switch (status) {
    case AllocStatus::ok:
      return "ok";
    case AllocStatus::out_of_memory:
      return "out_of_memory";
    case AllocStatus::budget_cap:
      return "budget_cap";
    case AllocStatus::error:
      return "error";
  }
  return "?";
}

// The index of the calling thread, 0 for the first that asks. Inline and constant-initialised, so
// that stamping an event costs no call and no guard.
inline thread_local std::uint32_t tls_thread_index = UINT32_MAX;
[[nodiscard]] std::uint16_t assign_thread_index();
[[nodiscard]] inline std::uint16_t current_thread_index() {
  if (tls_thread_index == UINT32_MAX) [[unlikely]]
    tls_thread_index = assign_thread_index();
  return static_cast<std::uint16_t>(tls_thread_index);
}

}  // namespace oomlab
