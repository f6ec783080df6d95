// TensorFlow's OOM messages, and those of the BFC allocator it shares with XLA (the logged source
// path tells TensorFlow's build from jaxlib's): what oomlab exec reads in a program's output.
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

// How many lines after the BFC allocator's warning its dump may take (a line for each chunk).
constexpr int kPoolDumpLines = 1'000'000;

// TF and XLA share the BFC allocator and StreamExecutor; the logged source path tells them
// apart. TF builds XLA as external/local_xla, jaxlib as external/xla (once
// external/org_tensorflow).
std::string_view tf_or_xla(std::string_view line) {
  if (contains(line, "local_xla/") || contains(line, "local_tsl/")) return "TensorFlow";
  if (contains(line, "external/xla/") || contains(line, "external/org_tensorflow/")) {
    return "JAX/XLA";
  }
  if (contains(line, "tensorflow/")) return "TensorFlow";
  return contains(line, "xla/") ? "JAX/XLA" : "TensorFlow/XLA";
}

// tensorflow/core/framework/op_kernel.cc & allocator: "OOM when allocating tensor with
// shape[8,64,512,512] and type float on /job:localhost/...";
// tsl/framework/bfc_allocator.cc: "Allocator (GPU_0_bfc) ran out of memory trying to allocate
// 1.00GiB (rounded to 1073741824)requested by op MatMul"; stream_executor/cuda/cuda_driver.cc:
// "failed to allocate 17.79G (19104890880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY".
std::optional<OomReport> tensorflow_or_xla_allocator(std::string_view line) {
  if (contains(line, "OOM when allocating tensor")) {
    OomReport oom{.framework = "TensorFlow"};
    oom.request_bytes = oom_text::tensor_bytes(line);
    return oom;
  }
  // A warning logged before the caller raises (or copes): the raise that follows is the
  // failure itself (measured: JAX 0.8 on an H100 logs it, then raises JaxRuntimeError).
  if (contains(line, "Allocator (") && contains(line, "ran out of memory trying to allocate ")) {
    OomReport oom{.framework = std::string(tf_or_xla(line))};
    oom.request_bytes = size_after(line, "(rounded to ");
    if (!oom.request_bytes) oom.request_bytes = size_after(line, "trying to allocate ");
    oom.may_be_retried = true;
    oom.follow_up_lines = kPoolDumpLines;  // its dump of the pool, a line a chunk, then a summary
    return oom;
  }
  // xla/stream_executor/cuda/cuda_executor.cc, as logged on an H100 when the BFC allocator's
  // preallocation is refused: "Failed to allocate device memory of 59.38GiB (63763906560
  // bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of memory"; it then asks less.
  if (contains(line, "Failed to allocate device memory of ")) {
    OomReport oom{.framework = std::string(tf_or_xla(line))};
    oom.request_bytes = size_after(line, "device memory of ");
    oom.may_be_retried = true;
    oom.pool_region = true;
    return oom;
  }
  if (contains(line, "failed to allocate ") &&
      contains(line, "from device: CUDA_ERROR_OUT_OF_MEMORY")) {
    OomReport oom{.framework = std::string(tf_or_xla(line))};
    oom.request_bytes = size_after(line, "failed to allocate ");
    oom.may_be_retried = true;
    oom.pool_region = true;
    return oom;
  }
  return std::nullopt;
}

// The summary lines at the end of the BFC allocator's dump (LOG(INFO), so seen only with
// TF_CPP_MIN_LOG_LEVEL=0): "Sum Total of in-use chunks: 1.50GiB" and "Allocator memory summary:
// rounded request 10.11GiB, total free in pool 4.79GiB, largest free chunk usable by lower end
// 4.78GiB, unallocated bytes 0B, pool size 6.29GiB, pool limit 6.29GiB". Free in the pool counts
// the part of it no chunk was ever cut from (its "central gap"); what the pool may still grow by
// is its limit less its size.
bool bfc_pool_summary(OomReport& report, std::string_view line) {
  if (const auto in_use = size_after(line, "Sum Total of in-use chunks: ")) {
    report.framework_allocated_bytes = in_use;
    return true;
  }
  if (!contains(line, "Allocator memory summary: ")) return false;
  const auto free = size_after(line, "total free in pool ");
  const auto largest = size_after(line, "largest free chunk usable by lower end ");
  const auto limit = size_after(line, "pool limit ");
  if (!free || !limit) return false;
  report.framework_cached_free_bytes = free;
  report.framework_largest_free_bytes = largest;
  report.framework_limit_bytes = limit;
  return true;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect(
      {.name = "TensorFlow and XLA's BFC allocator",
       .rank = 50,
       .recognise = &tensorflow_or_xla_allocator,
       .follow_up = &bfc_pool_summary,
       .advice = {{.framework = "TensorFlow",
                   .capacity = "set TF_FORCE_GPU_ALLOW_GROWTH=true so TensorFlow takes memory as "
                               "it needs it, then reduce the batch size or use mixed precision "
                               "(keras mixed_precision)",
                   .sizing_setting = "TF_FORCE_GPU_ALLOW_GROWTH=true"},
                  // the line alone does not say which of the two built it
                  {.framework = "TensorFlow/XLA",
                   .capacity = "reduce the batch size or rematerialise (jax.checkpoint); "
                               "XLA_PYTHON_CLIENT_MEM_FRACTION sets how much of the card XLA's "
                               "pool may take",
                   .sizing_setting = "XLA_PYTHON_CLIENT_PREALLOCATE=false for JAX, "
                                     "TF_FORCE_GPU_ALLOW_GROWTH=true for TensorFlow"}},
       .shared_reporter = "TensorFlow/XLA",
       .reporter_named_by = {{"jax", "JAX/XLA"}, {"tensorflow", "TensorFlow"}}});
}

Framework describe_tensorflow() {
  return {.name = "TensorFlow",
          .summary = "its OOM messages read by exec (and its BFC allocator's, shared with XLA)",
          .add_oom_dialects = &add_oom_dialects};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(tensorflow)

}  // namespace oomlab
