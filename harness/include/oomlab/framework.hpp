// A framework as the registry holds it: what it brings to oomlab, registered from its own folder
// (frameworks/NAME/) as a scenario is, with one line (OOMLAB_REGISTER_FRAMEWORK). The engine, the
// reports and the CLI name no framework: they ask the registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlab {

class Registry;

// A framework's report of running out of GPU memory, as read from one line of a program's output:
// who reported it and the figures the message carries (absent: the message does not say).
struct OomReport {
  // "PyTorch", "cuBLAS"; one dialect may name several ("TensorFlow" or "JAX/XLA" from one shared
  // allocator's log).
  std::string framework;
  std::optional<std::uint64_t> request_bytes;
  std::optional<std::uint64_t> device_total_bytes;
  std::optional<std::uint64_t> device_free_bytes;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;  // reserved by it but unallocated
  // An allocator that sized its own pool from the device's TOTAL memory and so cannot start under
  // a smaller budget: the setting that fixes it ("" otherwise).
  std::string sizing_setting;
  // A failure the framework logs and then retries with less (TF/XLA's BFC allocator backs off
  // after a refused region): evidence, but not yet the failure itself.
  bool may_be_retried = false;
  // Lines after this one that may carry more of its figures (its dialect's `follow_up` reads them).
  int follow_up_lines = 0;
};

// What to do about a reporter's OOM, in its own terms ("" where it has nothing of its own: the
// engine's general words then).
struct OomAdvice {
  std::string framework;      // the reporter, as OomReport::framework names it
  std::string fragmentation;  // its cache holds enough free memory, in pieces too small
  std::string capacity;       // the program needs more than the budget holds
  // The setting that stops its allocator sizing its pool from the device's total memory.
  std::string sizing_setting;
};

// How a framework words its out-of-memory report. `recognise` reads one line (only the words the
// framework itself prints around its figures, never "memory" alone; safe on any bytes, never
// throws); `follow_up` reads a line after one it recognised and says whether it added a figure.
struct OomDialect {
  std::string name;  // "PyTorch's caching allocator", for messages
  // Asked before dialects of a lower rank: a message that quotes another's words (a CUDA error
  // inside a framework's own report) belongs to the most specific.
  int rank = 0;
  std::optional<OomReport> (*recognise)(std::string_view line) = nullptr;
  bool (*follow_up)(OomReport& report, std::string_view line) = nullptr;  // null: none come
  std::vector<OomAdvice> advice;  // for the reporters it names
};

struct Framework {
  std::string name;     // "PyTorch"
  std::string summary;  // one line, for `oomlab list`
  // What it adds to the catalogues when they are first read, after the engine's own backends and
  // formats (so that an adaptor can offer every backend it may sit over); null: nothing.
  void (*add_backends)(Registry& registry) = nullptr;
  void (*add_trace_formats)(Registry& registry) = nullptr;
  void (*add_oom_dialects)(Registry& registry) = nullptr;
  // Its own code's top folders as a Python frame names them ("torch/"): a block allocated there is
  // charged to the first frame outside them, the user's code or the library that called it.
  std::vector<std::string> packages;
  // Set in the environment of every program `exec` runs, over any value it had: what keeps the
  // framework's memory inside the budget's account (its NVLink multicast buffers off, say).
  std::vector<std::pair<std::string, std::string>> program_environment;
};

}  // namespace oomlab
