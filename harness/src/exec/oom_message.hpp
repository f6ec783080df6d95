// Recognising, in a program's output, the line where a framework reported running out of GPU
// memory, and reading the figures the message carries. `oomlab exec` feeds every line of the
// program's stdout and stderr through an OomScanner and reports what it kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "exec/traceback.hpp"
#include "oomlab/framework.hpp"

namespace oomlab {

// One framework's out-of-memory report (OomReport, oomlab/framework.hpp: who and its figures), as
// read from one line (and, for messages that go on over the following lines, from those).
struct ProgramOom : OomReport {
  std::string line;  // as printed: trimmed, valid UTF-8, cut to 400 bytes with "…"
  // The Python traceback the OOM's exception line ended, innermost first (empty: none printed).
  std::vector<TracebackFrame> traceback;
  // Its dialect's reader of the lines that follow (null: none carry its figures).
  bool (*follow_up)(OomReport& report, std::string_view line) = nullptr;

  [[nodiscard]] int richness() const;  // how many figures it carries
};

// The dialects `recognise_oom_line` asks, highest rank first: the engine's own (the CUDA
// libraries', CUDA's) put in the registry on the first call, then each registered framework's
// (Framework::add_oom_dialects), and plugins'.
[[nodiscard]] const std::list<OomDialect>& oom_dialects();
// What the reporter's own dialect advises (null: nothing of its own).
[[nodiscard]] const OomAdvice* oom_advice(std::string_view framework);

// One line (no newline) -> the OOM it reports, if it is one. Pure, never throws, linear in the
// line (only its first 64 KiB are read), safe on any bytes.
[[nodiscard]] std::optional<ProgramOom> recognise_oom_line(std::string_view line);

// A line that follows an OOM line, read by the OOM's dialect for more of its figures (PyTorch's
// cudaMallocAsync backend's "Requested               : 2.00 GiB", CUDA.jl's "Memory pool usage:
// ..."). Returns whether the line added a figure.
bool read_follow_up_figures(ProgramOom& oom, std::string_view line);

// When oomlab knows the budget: a backed-off region request larger than the whole budget is an
// allocator sizing itself from the device's total memory (JAX preallocation, TensorFlow's
// per_process_gpu_memory_fraction); sets the setting that fixes it (its dialect's advice).
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
  void consider(const ProgramOom& given, bool candidate_is_latest);

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
// `budget_free`: what the budget had left at the OOM (sampled), where known: a pool may grow
// only by what the card gives it.
[[nodiscard]] ProgramOomDiagnosis diagnose_program_oom(
    const ProgramOom& oom, std::optional<std::uint64_t> budget_free = std::nullopt);

}  // namespace oomlab
