// The errors oomlab throws. Each kind maps to one exit code (README.md, "Exit codes"), so the
// CLI never has to guess what went wrong from a message.
#pragma once

#include <stdexcept>
#include <string>

namespace oomlab {

enum class ErrorKind {
  usage,      // bad flags, values, names: exit 2
  input,      // a bad file (trace, plugin): exit 2
  no_device,  // no usable CUDA device for the chosen allocator: exit 3
  device,     // a CUDA call failed in a way that is not an OOM: the run's outcome is "error"
  io,         // writing results failed part-way (a full disk): the run's outcome is "error"
  internal,   // a bug in oomlab or a plugin
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  // A device call refused for want of memory (cudaErrorMemoryAllocation), as opposed to any other
  // failure: the caller may wait and retry where another process's allocations are the cause.
  [[nodiscard]] bool out_of_memory() const noexcept { return out_of_memory_; }

  [[nodiscard]] static Error device_out_of_memory(const std::string& message) {
    Error error(ErrorKind::device, message);
    error.out_of_memory_ = true;
    return error;
  }

 private:
  ErrorKind kind_;
  bool out_of_memory_ = false;
};

[[noreturn]] inline void throw_usage(const std::string& message) {
  throw Error(ErrorKind::usage, message);
}

// Thrown out of RunContext calls when SIGINT/SIGTERM asked the run to stop; the runner catches
// it, frees everything and records outcome "interrupted". Scenarios need not catch it.
class Interrupted : public std::exception {
 public:
  [[nodiscard]] const char* what() const noexcept override { return "interrupted"; }
};

// The same when the run passed its --timeout: outcome "timeout".
class TimedOut : public Interrupted {
 public:
  [[nodiscard]] const char* what() const noexcept override { return "timed out"; }
};

}  // namespace oomlab
