// A framework as the registry holds it: what it brings to oomlab, registered from its own folder
// (frameworks/NAME/) as a scenario is, with one line (OOMLAB_REGISTER_FRAMEWORK). The engine, the
// reports and the CLI name no framework: they ask the registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oomlab {

class Registry;

// A framework's report of running out of GPU memory, as read from one line of a program's output.
// The figures it carries (absent: the message does not say).
struct OomFigures {
  std::optional<std::uint64_t> request_bytes;
  std::optional<std::uint64_t> device_total_bytes;
  std::optional<std::uint64_t> device_free_bytes;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;  // reserved by it but unallocated
  // An allocator that sized its own pool from the device's total memory and cannot start under a
  // smaller budget: the setting that fixes it ("" otherwise).
  std::string sizing_setting;
  // A failure the framework logs and then retries with less: evidence, not yet the failure.
  bool may_be_retried = false;
};

// How a framework words its out-of-memory report: `recognise` reads one line (safe on any bytes,
// never throws); `follow_up` reads a line after one it recognised, for messages that give their
// figures on the lines that follow, and says whether it added a figure (null: none do).
struct OomDialect {
  std::string framework;  // who prints it, as a person names it: "PyTorch", "cuBLAS"
  // The line's reporter when it is one of this dialect's (it may be more precise than
  // `framework`: "TensorFlow" or "JAX/XLA" from one shared allocator's log), and its figures.
  struct Found {
    std::string framework;
    OomFigures figures;
  };
  std::optional<Found> (*recognise)(std::string_view line) = nullptr;
  bool (*follow_up)(OomFigures& figures, std::string_view line) = nullptr;
  // Lines that follow a recognised one and may carry its figures (0: none).
  int follow_up_lines = 0;
  // Asked before dialects of a lower rank: a message that quotes another's words (a CUDA error
  // inside a framework's own report) belongs to the most specific.
  int rank = 0;
};

struct Framework {
  std::string name;     // "PyTorch"
  std::string summary;  // one line, for `oomlab list`
  // What it adds to the catalogues when they are first read, after the engine's own backends and
  // formats (so that an adaptor can offer every backend it may sit over); null: nothing.
  void (*add_backends)(Registry& registry) = nullptr;
  void (*add_trace_formats)(Registry& registry) = nullptr;
  void (*add_oom_dialects)(Registry& registry) = nullptr;
};

}  // namespace oomlab
