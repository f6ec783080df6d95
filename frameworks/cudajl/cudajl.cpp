// CUDA.jl's OOM messages (Julia), its pool's usage on the lines that follow: what oomlab exec
// reads in a program's output.
#include <cstdint>
#include <optional>
#include <string_view>

#include "exec/oom_text.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {
namespace {

using oom_text::contains;
using oom_text::size_after;
using oom_text::size_before;

constexpr int kFollowUpLines = 8;

bool set_if_found(std::optional<std::uint64_t>& figure, std::optional<std::uint64_t> read) {
  if (!read) return false;
  figure = read;
  return true;
}

// CUDA.jl src/pool.jl, memory_status: "Effective GPU memory usage: 99.85% (15.758 GiB/15.782
// GiB)" and "Memory pool usage: 13.411 GiB (15.281 GiB reserved)" or "(980.317 MiB allocated,
// 0 bytes cached)".
bool read_cuda_jl_figures(OomReport& oom, std::string_view line) {
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

// CUDA.jl src/pool.jl, OutOfGPUMemoryError: "Out of GPU memory trying to allocate 1.000 GiB",
// its usage on the following lines; lib/cudadrv/error.jl, CuError: "CUDA error: out of memory
// (code 2, ERROR_OUT_OF_MEMORY)".
std::optional<OomReport> cuda_jl(std::string_view line) {
  if (contains(line, "Out of GPU memory trying to allocate ")) {
    OomReport oom{.framework = "CUDA.jl"};
    oom.request_bytes = size_after(line, "Out of GPU memory trying to allocate ");
    read_cuda_jl_figures(oom, line);
    oom.follow_up_lines = kFollowUpLines;
    return oom;
  }
  if (contains(line, "(code 2, ERROR_OUT_OF_MEMORY)")) {
    OomReport oom{.framework = "CUDA.jl"};
    oom.follow_up_lines = kFollowUpLines;  // its pool's usage may follow
    return oom;
  }
  return std::nullopt;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect(
      {.name = "CUDA.jl",
       .rank = 40,
       .recognise = &cuda_jl,
       .follow_up = &read_cuda_jl_figures,
       .advice = {{.framework = "CUDA.jl",
                   .fragmentation = "return the pool's cached blocks (GC.gc(); CUDA.reclaim()) "
                                    "before the large allocation, or allocate the largest arrays "
                                    "first",
                   .capacity = "process the data in smaller arrays or batches"}}});
}

Framework describe_cudajl() {
  return {.name = "CUDA.jl",
          .summary = "its OOM messages read by exec (Julia)",
          .add_oom_dialects = &add_oom_dialects};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(cudajl)

}  // namespace oomlab
