// While one lives, the first SIGINT or SIGTERM asks the run to stop cleanly (everything freed,
// the record written, exit 130); a second one, with the default action restored, ends the
// process at once. A first signal after it is gone only sets the flag: the process ends with the
// result it has (a matrix stopped the moment its cell's run ended keeps that cell's outcome).
#pragma once

#include <atomic>

namespace oomlab::cli {

class StopOnSignal {
 public:
  StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  StopOnSignal(StopOnSignal&&) = delete;
  StopOnSignal& operator=(StopOnSignal&&) = delete;

  [[nodiscard]] static const std::atomic<bool>* flag();
};

// A matrix cell's process dies with the matrix that started it (SIGKILL: its memory goes back to
// the device with the process), even when a second Ctrl-C kills the matrix at once. No-op
// unless the matrix set OOMLAB_MATRIX_PARENT to its own pid.
void die_with_matrix_parent();
inline constexpr int kParentGoneExit = 125;
inline constexpr const char* kMatrixParentVariable = "OOMLAB_MATRIX_PARENT";

}  // namespace oomlab::cli
