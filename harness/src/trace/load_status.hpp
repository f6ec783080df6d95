// How far the trace being read has got: a progress line reads it from another thread while a
// trace of gigabytes loads (one at a time: the commands read a trace once, before their runs).
#pragma once

#include <cstdint>

namespace oomlab::trace {

struct LoadStatus {
  bool loading = false;
  std::uint64_t bytes_read = 0;   // of the file (0 where its reader does not say)
  std::uint64_t bytes_total = 0;  // the file's size
  std::uint64_t events = 0;       // events built so far
};

[[nodiscard]] LoadStatus load_status();

// For the readers.
namespace loading {
void begin(std::uint64_t bytes_total);
void end();
void bytes_read(std::uint64_t bytes);
void events(std::uint64_t events);
}  // namespace loading

}  // namespace oomlab::trace
