// PyTorch's OOM messages: its caching allocator's OutOfMemoryError (asked before the CUDA
// libraries', whose words it may quote), its cudaMallocAsync backend's (figures on the lines that
// follow) and a CUDA call failing inside PyTorch (asked late: only CUDA's own words).
#include "pytorch/exec/oom_dialect.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

#include "exec/oom_text.hpp"
#include "oomlab/framework.hpp"

namespace oomlab::torch {
namespace {

using oom_text::contains;
using oom_text::size_after;
using oom_text::size_before;

constexpr int kFollowUpLines = 8;

std::optional<std::uint64_t> difference(std::optional<std::uint64_t> whole,
                                        std::optional<std::uint64_t> part) {
  if (!whole || !part || *part > *whole) return std::nullopt;
  return *whole - *part;
}

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

bool set_figure_if_found(std::optional<std::uint64_t>& figure, std::optional<std::uint64_t> read) {
  if (!read) return false;
  figure = read;
  return true;
}

// c10/cuda/CUDAMallocAsyncAllocator.cpp's lines after "would exceed allowed memory".
bool read_malloc_async_figures(OomReport& oom, std::string_view line) {
  bool read = set_figure_if_found(oom.framework_allocated_bytes,
                                  labelled_size(line, "Currently allocated"));
  read |= set_figure_if_found(oom.request_bytes, labelled_size(line, "Requested"));
  read |= set_figure_if_found(oom.device_total_bytes, labelled_size(line, "Device limit"));
  read |=
      set_figure_if_found(oom.device_free_bytes, labelled_size(line, "Free (according to CUDA)"));
  return read;
}

// c10/cuda/CUDACachingAllocator.cpp (2.x): "CUDA out of memory. Tried to allocate 20.00 MiB.
// GPU 0 has a total capacity of ... of which ... is free. ... this process has ... memory in
// use. Of the allocated memory ... is allocated by PyTorch, and ... is reserved by PyTorch but
// unallocated."; 1.x: "(GPU 0; 7.93 GiB total capacity; 130.35 MiB already allocated; 47.06 MiB
// free; 188.00 MiB reserved in total by PyTorch)"; 1.0-1.3: "...; 30.96 MiB cached)".
std::optional<OomReport> pytorch_caching(std::string_view line) {
  const bool tried = contains(line, " out of memory. Tried to allocate ");
  const bool raised = contains(line, "Error: CUDA out of memory.") ||
                      line.starts_with("CUDA out of memory.") ||
                      contains(line, "cuda runtime error (2) : out of memory");  // 0.4's THC
  if (!tried && !raised) return std::nullopt;
  OomReport oom{.framework = "PyTorch"};
  oom.request_bytes = size_after(line, "Tried to allocate ");
  oom.device_total_bytes = size_after(line, "total capacity of ");
  if (!oom.device_total_bytes) oom.device_total_bytes = size_after(line, "total capacty of ");
  if (!oom.device_total_bytes) oom.device_total_bytes = size_before(line, " total capacity;");
  oom.device_free_bytes = size_after(line, " of which ");
  if (!oom.device_free_bytes) oom.device_free_bytes = size_before(line, " free;");
  oom.process_used_bytes = size_after(line, "this process has ");
  oom.framework_allocated_bytes = size_after(line, "Of the allocated memory ");
  if (!oom.framework_allocated_bytes) {
    oom.framework_allocated_bytes = size_before(line, " already allocated");
  }
  oom.framework_cached_free_bytes = size_before(line, " is reserved by PyTorch but unallocated");
  if (!oom.framework_cached_free_bytes) {
    oom.framework_cached_free_bytes = difference(size_before(line, " reserved in total by PyTorch"),
                                                 oom.framework_allocated_bytes);
  }
  if (!oom.framework_cached_free_bytes) {
    oom.framework_cached_free_bytes = size_before(line, " cached)");
  }
  return oom;
}

// c10/cuda/CUDAMallocAsyncAllocator.cpp: "Allocation on device 0 would exceed allowed memory.
// (out of memory)", its figures on the lines that follow. c10/cuda/CUDAException.cpp: a CUDA
// call failing inside PyTorch, "CUDA error: out of memory".
std::optional<OomReport> pytorch_other(std::string_view line) {
  if (contains(line, " would exceed allowed memory. (out of memory)")) {
    OomReport oom{.framework = "PyTorch"};
    read_malloc_async_figures(oom, line);
    oom.follow_up_lines = kFollowUpLines;
    return oom;
  }
  // c10's CUDA_CHECK prints cudaGetErrorString's words alone; a line that also names the error
  // (cudaErrorMemoryAllocation) is a program's own check of the runtime (measured: a CUDA
  // program's "CUDA error: out of memory (cudaErrorMemoryAllocation)" was called PyTorch).
  if (contains(line, "CUDA error: out of memory") && !contains(line, "cudaError"))
    return OomReport{.framework = "PyTorch"};
  return std::nullopt;
}

}  // namespace

std::vector<OomDialect> pytorch_oom_dialects() {
  const OomAdvice advice{
      .framework = "PyTorch",
      .fragmentation =
          "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cache can "
          "grow its segments in place instead of splitting them",
      .capacity =
          "reduce the batch size, train in mixed precision (torch.autocast with "
          "bf16/fp16), or recompute activations (torch.utils.checkpoint)"};
  return {{.name = "PyTorch's caching allocator",
           .rank = 90,
           .recognise = &pytorch_caching,
           .advice = {advice}},
          {.name = "PyTorch's cudaMallocAsync backend and CUDA checks",
           .rank = 30,
           .recognise = &pytorch_other,
           .follow_up = &read_malloc_async_figures}};
}

}  // namespace oomlab::torch
