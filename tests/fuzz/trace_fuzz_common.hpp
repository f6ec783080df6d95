// Shared by the trace importers' fuzz targets: a clean refusal (oomlab::Error) is fine; a crash,
// a sanitizer report, another exception, or a trace a replay could trip on is a bug.
#pragma once

#include <vector>

#include "oomlab/error.hpp"
#include "trace/trace.hpp"

namespace oomlab::fuzz {

// Every slot is held by one allocation at a time, and a free empties the slot its allocation
// filled.
inline void check_trace(const trace::Trace& t) {
  std::vector<bool> held(t.slots, false);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event e = t.events[i];
    if (e.stream >= t.streams.size()) __builtin_trap();
    if (e.slot == trace::Event::kNone) continue;
    if (e.op == trace::Op::failed || e.slot >= t.slots) __builtin_trap();
    if (held[e.slot] == (e.op == trace::Op::alloc)) __builtin_trap();
    held[e.slot] = e.op == trace::Op::alloc;
  }
}

template <typename Parse>
void refused_or_checked(Parse&& parse) {
  try {
    check_trace(parse());
  } catch (const oomlab::Error&) {  // the expected answer to a bad file
  }
}

}  // namespace oomlab::fuzz
