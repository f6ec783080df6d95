// Recognising, in a program's output, the line where a framework reported running out of GPU
// memory, and reading the figures the message carries. `oomlab exec` feeds every line of the
// program's stdout and stderr through an OomScanner and reports what it kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "exec/traceback.hpp"

namespace oomlab {

// One framework's out-of-memory report, as read from one line (and, for messages that go on
// over the following lines, from those).
struct ProgramOom {
  std::string framework;  // "PyTorch", "TensorFlow", "JAX/XLA", "CuPy", "CUDA runtime", ...
  std::string line;       // as printed: trimmed, valid UTF-8, cut to 400 bytes with "…"
  std::optional<std::uint64_t> request_bytes;
  std::optional<std::uint64_t> device_total_bytes;
  std::optional<std::uint64_t> device_free_bytes;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;  // reserved by it but unallocated
  // A framework that sized its own pool from the device's TOTAL memory and so cannot start
  // under a smaller budget: the setting that fixes it. Empty otherwise.
  std::string sizing_setting;
  // A failure the framework logs and then retries with less (TF/XLA's BFC allocator backs off
  // after a refused region): evidence, but not yet the failure itself.
  bool may_be_retried = false;
  // The Python traceback the OOM's exception line ended, innermost first (empty: none printed).
  std::vector<TracebackFrame> traceback;

  [[nodiscard]] int richness() const;  // how many figures it carries
};

// One line (no newline) -> the OOM it reports, if it is one. Pure, never throws, linear in the
// line (only its first 64 KiB are read), safe on any bytes.
[[nodiscard]] std::optional<ProgramOom> recognise_oom_line(std::string_view line);

// Lines that follow an OOM line and carry more of its figures: PyTorch's cudaMallocAsync
// backend ("Requested               : 2.00 GiB") and CUDA.jl ("Memory pool usage: ...").
// Returns whether the line added a figure.
bool read_follow_up_figures(ProgramOom& oom, std::string_view line);

// When oomlab knows the budget: a backed-off region request larger than the whole budget is an
// allocator sizing itself from the device's total memory (JAX preallocation, TensorFlow's
// per_process_gpu_memory_fraction); sets the setting that fixes it.
void note_budget(ProgramOom& oom, std::uint64_t budget_bytes);

// Fed the program's output line by line (stdout and stderr interleaved). Keeps the first OOM
// line, replaced by a later one only when that one carries more figures, or when the kept one
// may still have been retried and the later one is a failure for certain.
class OomScanner {
 public:
  void feed_line(std::string_view line);
  [[nodiscard]] const std::optional<ProgramOom>& found() const { return found_; }
  [[nodiscard]] std::size_t lines_seen() const { return lines_seen_; }  // OOM lines in all
  // The first sizing setting any OOM line called for (kept even when a richer line replaced
  // that line): non-empty when a JAX/XLA or TensorFlow preallocation failure was seen.
  [[nodiscard]] const std::string& sizing_setting() const { return sizing_setting_; }

 private:
  void consider(const ProgramOom& candidate, bool candidate_is_latest);

  TracebackReader tracebacks_;
  std::vector<TracebackFrame> traced_;  // the traceback last given to an OOM line
  std::optional<ProgramOom> found_;
  std::optional<ProgramOom> latest_;  // the last OOM line, still taking follow-up figures
  bool found_is_latest_ = false;
  int follow_up_lines_left_ = 0;
  std::size_t lines_seen_ = 0;
  std::string sizing_setting_;
};

// The cause that follows from a message's figures. With PyTorch's two figures (or any
// framework's same two): reserved-but-unallocated >= request is fragmentation of the
// framework's cache, otherwise capacity. A framework sizing itself is capacity, with the
// setting as advice. No figures: capacity, "the message carries no figures".
struct ProgramOomDiagnosis {
  Cause cause = Cause::capacity;
  std::string evidence;  // one line, with the message's figures
  std::string advice;    // one line, for the framework and the cause
};
[[nodiscard]] ProgramOomDiagnosis diagnose_program_oom(const ProgramOom& oom);

}  // namespace oomlab
