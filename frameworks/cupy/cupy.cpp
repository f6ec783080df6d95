// CuPy's OOM messages: what oomlab exec reads in a program's output.
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

// cupy/cuda/memory.pyx, OutOfMemoryError: "Out of memory allocating 1,073,741,824 bytes
// (allocated so far: 0 bytes)."; cupy_backends/cuda/api/runtime.pyx, CUDARuntimeError.
std::optional<OomReport> cupy(std::string_view line) {
  if (contains(line, "Out of memory allocating ") && contains(line, " bytes")) {
    OomReport oom{.framework = "CuPy"};
    oom.request_bytes = size_after(line, "Out of memory allocating ");
    oom.framework_allocated_bytes = size_after(line, "allocated so far: ");
    return oom;
  }
  if (contains(line, "CUDARuntimeError: cudaErrorMemoryAllocation"))
    return OomReport{.framework = "CuPy"};
  return std::nullopt;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect(
      {.name = "CuPy",
       .rank = 60,
       .recognise = &cupy,
       .advice = {{.framework = "CuPy",
                   .fragmentation = "free CuPy's pool between phases "
                                    "(cupy.get_default_memory_pool().free_all_blocks())",
                   .capacity = "cap CuPy's pool (cupy.get_default_memory_pool().set_limit(...)) "
                               "and process the data in smaller chunks"}}});
}

Framework describe_cupy() {
  return {.name = "CuPy",
          .summary = "its OOM messages read by exec",
          .add_oom_dialects = &add_oom_dialects};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(cupy)

}  // namespace oomlab
