// RMM's OOM messages (RAPIDS' memory manager): what oomlab exec reads in a program's output.
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

// rmm/detail/error.hpp, RMM_CUDA_TRY_ALLOC: "std::bad_alloc: out_of_memory: CUDA error (failed
// to allocate 2778950720 bytes) at: ...", older "out_of_memory: CUDA error at: ...";
// rmm/mr/device/pool_memory_resource.hpp: "Maximum pool size exceeded".
std::optional<OomReport> rmm(std::string_view line) {
  const bool cuda = contains(line, "out_of_memory: CUDA error");
  const bool pool =
      contains(line, "out_of_memory: RMM failure") || contains(line, "Maximum pool size exceeded");
  if (!cuda && !pool && !contains(line, "rmm::out_of_memory")) return std::nullopt;
  OomReport oom{.framework = "RMM"};
  oom.request_bytes = size_after(line, "(failed to allocate ");
  return oom;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect(
      {.name = "RMM",
       .rank = 70,
       .recognise = &rmm,
       .advice = {{.framework = "RMM",
                   .capacity =
                       "size RMM's pool to the budget (rmm.reinitialize(pool_allocator="
                       "True, initial_pool_size=...)) or enable spilling (CUDF_SPILL=on)"}}});
}

Framework describe_rmm() {
  return {.name = "RMM",
          .summary = "its OOM messages read by exec (its logs are the trace format rmm)",
          .add_oom_dialects = &add_oom_dialects};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(rmm)

}  // namespace oomlab
