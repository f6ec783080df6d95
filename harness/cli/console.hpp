// stderr for a run: one-line notices and, on a terminal, a progress line that redraws itself.
// Both can come from different threads (the progress ticker), so writes are serialised.
#pragma once

#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

#include "run/runner.hpp"

namespace oomlab::cli {

class Console {
 public:
  Console(std::ostream& err, bool show_progress) : err_(err), show_progress_(show_progress) {}

  [[nodiscard]] bool progress_enabled() const { return show_progress_; }

  void notice(std::string_view text) {
    const std::lock_guard lock(mutex_);
    clear_line();
    err_ << "oomlab: note: " << text << '\n' << std::flush;
  }

  void progress(const std::string& line) {
    const std::lock_guard lock(mutex_);
    if (!show_progress_) return;
    err_ << "\r\033[K" << line << std::flush;
    line_shown_ = true;
  }

  void end_progress() {
    const std::lock_guard lock(mutex_);
    clear_line();
  }

 private:
  void clear_line() {
    if (!line_shown_) return;
    err_ << "\r\033[K" << std::flush;
    line_shown_ = false;
  }

  std::mutex mutex_;
  std::ostream& err_;
  bool show_progress_;
  bool line_shown_ = false;
};

// "fragmentation/async · fill · 12,345 events · live 1.20 GiB of 2.00 GiB (60%) · 1.3 s"
[[nodiscard]] std::string progress_line(std::string_view name, const ProgressSnapshot& s);

}  // namespace oomlab::cli
