// What a program's OOM message says about its cause, and the usual remedy for its framework.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "exec/oom_message.hpp"
#include "exec/oom_text.hpp"

namespace oomlab {
namespace {

using oom_text::two_decimal_size;

// The remedy for a framework's cache holding enough free memory in pieces too small.
std::string fragmentation_advice(std::string_view framework) {
  if (framework == "PyTorch") {
    return "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cache can grow its "
           "segments in place instead of splitting them";
  }
  if (framework == "CUDA.jl") {
    return "return the pool's cached blocks (GC.gc(); CUDA.reclaim()) before the large "
           "allocation, or allocate the largest arrays first";
  }
  if (framework == "CuPy") {
    return "free CuPy's pool between phases (cupy.get_default_memory_pool().free_all_blocks())";
  }
  return fmt::format(
      "{}'s cache holds enough free memory but not in one piece: allocate the "
      "largest buffers first, or release the cache before the large request",
      framework);
}

// The remedy when the program needs more than the budget holds.
std::string capacity_advice(std::string_view framework) {
  if (framework == "PyTorch") {
    return "reduce the batch size, train in mixed precision (torch.autocast with bf16/fp16), or "
           "recompute activations (torch.utils.checkpoint)";
  }
  if (framework == "TensorFlow") {
    return "set TF_FORCE_GPU_ALLOW_GROWTH=true so TensorFlow takes memory as it needs it, then "
           "reduce the batch size or use mixed precision (keras mixed_precision)";
  }
  if (framework == "JAX/XLA" || framework == "TensorFlow/XLA") {
    return "reduce the batch size or rematerialise (jax.checkpoint); XLA_PYTHON_CLIENT_MEM_"
           "FRACTION sets how much of the card XLA's pool may take";
  }
  if (framework == "CuPy") {
    return "cap CuPy's pool (cupy.get_default_memory_pool().set_limit(...)) and process the data "
           "in smaller chunks";
  }
  if (framework == "RMM") {
    return "size RMM's pool to the budget (rmm.reinitialize(pool_allocator=True, "
           "initial_pool_size=...)) or enable spilling (CUDF_SPILL=on)";
  }
  if (framework == "CUDA.jl") return "process the data in smaller arrays or batches";
  if (framework.starts_with("cu")) {
    return fmt::format(
        "{} could not get memory for its handle or workspace: leave it headroom "
        "below the budget (a smaller batch, or a smaller framework pool)",
        framework);
  }
  return "reduce the size of the request, or free device memory before it";
}

std::string figures_evidence(const ProgramOom& oom) {
  std::string evidence;
  const auto add = [&](const std::optional<std::uint64_t>& figure, std::string_view what) {
    if (!figure) return;
    if (!evidence.empty()) evidence += ", ";
    evidence += fmt::format("{} {}", two_decimal_size(*figure), what);
  };
  add(oom.request_bytes, "requested");
  add(oom.device_free_bytes, "free on the device");
  add(oom.device_total_bytes, "in total");
  add(oom.process_used_bytes, "used by the process");
  add(oom.framework_allocated_bytes, fmt::format("allocated by {}", oom.framework));
  return evidence;
}

// The framework's cache free (reserved but unallocated) and the device's free memory, beside the
// request: together as large as the request, they are free memory in pieces (fragmentation: the
// framework already gave back its wholly free segments before it raised); smaller, the program
// needs more than there is (capacity).
ProgramOomDiagnosis from_cache_figures(const ProgramOom& oom) {
  const std::uint64_t cached = *oom.framework_cached_free_bytes;
  const std::uint64_t request = *oom.request_bytes;
  const std::uint64_t device_free = oom.device_free_bytes.value_or(0);
  const bool fragmented = cached + device_free >= request;
  std::string evidence;
  if (!oom.device_free_bytes) {
    evidence =
        fmt::format("{} reserved by {} but unallocated {} {} requested", two_decimal_size(cached),
                    oom.framework, fragmented ? ">=" : "<", two_decimal_size(request));
  } else {
    evidence = fmt::format(
        "{} reserved by {} but unallocated + {} free on the device = {} {} {} requested{}",
        two_decimal_size(cached), oom.framework, two_decimal_size(device_free),
        two_decimal_size(cached + device_free), fragmented ? ">=" : "<", two_decimal_size(request),
        fragmented ? ", but in no one piece" : "");
  }
  return {fragmented ? Cause::fragmentation : Cause::capacity, std::move(evidence),
          fragmented ? fragmentation_advice(oom.framework) : capacity_advice(oom.framework)};
}

}  // namespace

ProgramOomDiagnosis diagnose_program_oom(const ProgramOom& oom) {
  if (!oom.sizing_setting.empty()) {
    return {Cause::capacity,
            fmt::format("{} sizes its memory pool from the device's total memory, more than the "
                        "budget leaves it",
                        oom.framework),
            fmt::format("set {}", oom.sizing_setting)};
  }
  if (oom.request_bytes && oom.framework_cached_free_bytes) return from_cache_figures(oom);
  if (oom.richness() == 0) {
    return {Cause::capacity, "the message carries no figures", capacity_advice(oom.framework)};
  }
  return {Cause::capacity, figures_evidence(oom), capacity_advice(oom.framework)};
}

}  // namespace oomlab
