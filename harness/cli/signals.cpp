#include "cli/signals.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

namespace oomlab::cli {

namespace {
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int /*signal*/) {
  g_stop.store(true);
}
}  // namespace

// The handler is never taken down: a stop that comes after the command's work has ended (its
// record written, its answer printed) is too late to stop anything, and the default action would
// kill a process that is only exiting with its result; a second signal still ends it at once
// (SA_RESETHAND).
StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

const std::atomic<bool>* StopOnSignal::flag() {
  return &g_stop;
}

void die_with_matrix_parent() {
  const char* parent = std::getenv(kMatrixParentVariable);  // NOLINT(concurrency-mt-unsafe)
  if (parent == nullptr) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (std::to_string(::getppid()) != parent) std::_Exit(kParentGoneExit);  // it died before prctl
}

}  // namespace oomlab::cli
