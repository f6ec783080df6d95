// While one lives, the first SIGINT or SIGTERM asks the run to stop cleanly (everything freed,
// the record written, exit 130); a second one, with the default action restored, ends the
// process at once.
#pragma once

#include <atomic>

namespace oomlab::cli {

class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  StopOnSignal(StopOnSignal&&) = delete;
  StopOnSignal& operator=(StopOnSignal&&) = delete;

  [[nodiscard]] static const std::atomic<bool>* flag();
};

}  // namespace oomlab::cli
