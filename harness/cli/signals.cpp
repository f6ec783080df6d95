#include "cli/signals.hpp"

#include <csignal>

namespace oomlab::cli {

namespace {
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int /*signal*/) { g_stop.store(true); }
}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

StopOnSignal::~StopOnSignal() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

const std::atomic<bool>* StopOnSignal::flag() { return &g_stop; }

}  // namespace oomlab::cli
