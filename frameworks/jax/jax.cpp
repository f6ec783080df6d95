// JAX's OOM messages (XLA's RESOURCE_EXHAUSTED, its preallocation refused at start-up): what
// oomlab exec reads in a program's output.
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

// xla/service/shaped_buffer / pjrt: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
// 1073741824 bytes." and "RESOURCE_EXHAUSTED: Failed to allocate request for 6.27GiB
// (6727663616B) on device ordinal 0"; jax/_src/xla_bridge.py: "CUDA backend failed to
// initialize: ... This may be due to JAX pre-allocating too much device memory".
std::optional<OomReport> jax_xla(std::string_view line) {
  if (contains(line, "CUDA backend failed to initialize") && contains(line, "pre-allocat")) {
    OomReport oom{.framework = "JAX/XLA"};
    oom.sizing_setting =
        "XLA_PYTHON_CLIENT_PREALLOCATE=false (or XLA_PYTHON_CLIENT_MEM_FRACTION=...)";
    return oom;
  }
  const bool exhausted =
      contains(line, "RESOURCE_EXHAUSTED") || contains(line, "Resource exhausted: ");
  if (!exhausted) return std::nullopt;
  OomReport oom{.framework = "JAX/XLA"};
  oom.request_bytes = size_after(line, "Out of memory while trying to allocate ");
  if (!oom.request_bytes) oom.request_bytes = size_after(line, "Failed to allocate request for ");
  if (!oom.request_bytes && !contains(line, "memory")) return std::nullopt;
  return oom;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect(
      {.name = "JAX/XLA",
       .rank = 20,
       .recognise = &jax_xla,
       .advice = {{.framework = "JAX/XLA",
                   .capacity = "reduce the batch size or rematerialise (jax.checkpoint); "
                               "XLA_PYTHON_CLIENT_MEM_FRACTION sets how much of the card XLA's "
                               "pool may take",
                   .sizing_setting = "XLA_PYTHON_CLIENT_PREALLOCATE=false (or "
                                     "XLA_PYTHON_CLIENT_MEM_FRACTION=...)"}}});
}

Framework describe_jax() {
  return {.name = "JAX",
          .summary = "its OOM messages read by exec (XLA's RESOURCE_EXHAUSTED, preallocation)",
          .add_oom_dialects = &add_oom_dialects};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(jax)

}  // namespace oomlab
