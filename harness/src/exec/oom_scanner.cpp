// The figures that arrive on the lines after an OOM line, and the scanner that keeps the best
// OOM line of a whole run.
#include <string_view>
#include <utility>

#include "exec/oom_message.hpp"
#include "exec/oom_text.hpp"

namespace oomlab {
namespace {

using oom_text::contains;
using oom_text::size_after;
using oom_text::size_before;

constexpr int kFollowUpLines = 8;

// "Requested               : 2.00 GiB": the size after the colon that follows `key`.
std::optional<std::uint64_t> labelled_size(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t colon = line.find(':', at + key.size());
  if (colon == std::string_view::npos || colon - at > key.size() + 24) return std::nullopt;
  const auto size = oom_text::read_size(line, colon + 1);
  if (!size) return std::nullopt;
  return size->bytes;
}

bool set_if_found(std::optional<std::uint64_t>& figure, std::optional<std::uint64_t> read) {
  if (!read) return false;
  figure = read;
  return true;
}

// c10/cuda/CUDAMallocAsyncAllocator.cpp's lines after "would exceed allowed memory".
bool read_malloc_async_figures(ProgramOom& oom, std::string_view line) {
  bool read =
      set_if_found(oom.framework_allocated_bytes, labelled_size(line, "Currently allocated"));
  read |= set_if_found(oom.request_bytes, labelled_size(line, "Requested"));
  read |= set_if_found(oom.device_total_bytes, labelled_size(line, "Device limit"));
  read |= set_if_found(oom.device_free_bytes, labelled_size(line, "Free (according to CUDA)"));
  return read;
}

// CUDA.jl src/pool.jl, memory_status: "Effective GPU memory usage: 99.85% (15.758 GiB/15.782
// GiB)" and "Memory pool usage: 13.411 GiB (15.281 GiB reserved)" or "(980.317 MiB allocated,
// 0 bytes cached)".
bool read_cuda_jl_figures(ProgramOom& oom, std::string_view line) {
  bool read = false;
  const std::size_t usage = line.find("Effective GPU memory usage: ");
  if (usage != std::string_view::npos) {
    const std::string_view rest = line.substr(usage);
    const auto used = size_after(rest, "% (");
    const std::size_t slash = rest.find('/');
    const auto total =
        slash == std::string_view::npos ? std::nullopt : size_after(rest.substr(slash), "/");
    if (used && total && *used <= *total) {
      oom.device_total_bytes = total;
      oom.device_free_bytes = *total - *used;
      read = true;
    }
  }
  const std::size_t pool = line.find("Memory pool usage: ");
  if (pool != std::string_view::npos) {
    const std::string_view rest = line.substr(pool);
    const auto allocated = size_after(rest, "Memory pool usage: ");
    const auto reserved = size_before(rest, " reserved)");
    read |= set_if_found(oom.framework_allocated_bytes, allocated);
    if (allocated && reserved && *reserved >= *allocated) {
      oom.framework_cached_free_bytes = *reserved - *allocated;
      read = true;
    }
    read |= set_if_found(oom.framework_cached_free_bytes, size_before(rest, " cached)"));
  }
  return read;
}

bool takes_follow_up_lines(const ProgramOom& oom) {
  return oom.framework == "CUDA.jl" ||
         (oom.framework == "PyTorch" && contains(oom.line, "would exceed allowed memory"));
}

}  // namespace

bool read_follow_up_figures(ProgramOom& oom, std::string_view line) {
  const bool async = read_malloc_async_figures(oom, line);
  const bool julia = read_cuda_jl_figures(oom, line);
  return async || julia;
}

void note_budget(ProgramOom& oom, std::uint64_t budget_bytes) {
  if (!oom.may_be_retried || !oom.request_bytes || *oom.request_bytes <= budget_bytes) return;
  if (oom.framework == "JAX/XLA") {
    oom.sizing_setting =
        "XLA_PYTHON_CLIENT_PREALLOCATE=false (or XLA_PYTHON_CLIENT_MEM_FRACTION=...)";
  } else if (oom.framework == "TensorFlow") {
    oom.sizing_setting = "TF_FORCE_GPU_ALLOW_GROWTH=true";
  } else {  // the line alone does not say which of the two built it
    oom.sizing_setting =
        "XLA_PYTHON_CLIENT_PREALLOCATE=false for JAX, TF_FORCE_GPU_ALLOW_GROWTH=true for "
        "TensorFlow";
  }
}

namespace {

// "jax.errors.JaxRuntimeError: ...", "RuntimeError: ...": the exception the program died of, as
// its traceback's last line names it (not a log line or a dump that quotes the same words).
bool names_an_exception(std::string_view line) {
  const std::size_t colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view name = line.substr(0, colon);
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
      std::string_view::npos)
    return false;
  return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exhausted");
}

}  // namespace

void OomScanner::consider(const ProgramOom& candidate, bool candidate_is_latest) {
  const bool same_kind = found_ && found_->may_be_retried == candidate.may_be_retried;
  // On a tie, the line that names the exception raised (measured: JAX 0.8 prints its HLO dump
  // ending in the same RESOURCE_EXHAUSTED words before the JaxRuntimeError line).
  const bool raised_tie = same_kind && candidate.richness() == found_->richness() &&
                          names_an_exception(candidate.line) && !names_an_exception(found_->line);
  const bool replaces = !found_ || (found_->may_be_retried && !candidate.may_be_retried) ||
                        (same_kind && candidate.richness() > found_->richness()) || raised_tie;
  if (replaces) {
    std::vector<TracebackFrame> traceback =
        found_ ? found_->traceback : std::vector<TracebackFrame>{};
    found_ = candidate;
    if (found_->traceback.empty()) found_->traceback = std::move(traceback);
    found_is_latest_ = candidate_is_latest;
  } else if (candidate_is_latest && found_is_latest_) {
    found_ = candidate;  // the kept line itself took more figures
  }
}

void OomScanner::feed_line(std::string_view line) {
  tracebacks_.feed(line);
  if (auto oom = recognise_oom_line(line)) {
    ++lines_seen_;
    if (!tracebacks_.last().empty() && tracebacks_.last() != traced_) {
      oom->traceback = tracebacks_.last();  // the traceback this exception line ended
      traced_ = tracebacks_.last();
    }
    if (sizing_setting_.empty()) sizing_setting_ = oom->sizing_setting;
    found_is_latest_ = false;
    latest_ = std::move(*oom);
    follow_up_lines_left_ = takes_follow_up_lines(*latest_) ? kFollowUpLines : 0;
    consider(*latest_, true);
    return;
  }
  if (follow_up_lines_left_ > 0 && latest_) {
    --follow_up_lines_left_;
    if (read_follow_up_figures(*latest_, line)) consider(*latest_, true);
  }
}

}  // namespace oomlab
