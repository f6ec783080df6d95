// Shared by the trace importers' fuzz targets: a clean refusal (oomlab::Error) is fine; a crash,
// a sanitizer report, another exception, or a trace a replay could trip on is a bug.
#pragma once

#include "oomlab/error.hpp"
#include "trace/trace.hpp"

namespace oomlab::fuzz {

inline void check_trace(const trace::Trace& t) {
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.stream >= t.streams.size()) __builtin_trap();
    if (e.op == trace::Op::free && e.partner != trace::Event::kNoPartner) {
      if (e.partner >= i || t.events[e.partner].op != trace::Op::alloc) __builtin_trap();
      if (t.events[e.partner].address != e.address) __builtin_trap();
    }
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
