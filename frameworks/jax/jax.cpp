// JAX's OOM messages (XLA's RESOURCE_EXHAUSTED, its preallocation refused at start-up): what
// oomlab exec reads in a program's output.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/oom_text.hpp"
#include "jax/exec/xla_model.hpp"
#include "jax/exec/xla_program.hpp"
#include "jax/model/xla_backend.hpp"
#include "jax/model/xla_words.hpp"
#include "jax/trace/xla_log.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"

namespace oomlab {
namespace {

using oom_text::contains;
using oom_text::size_after;

// XLA's autotuner, where every candidate of an instruction was refused its memory (the compile
// fails; measured, JAX 0.11.2): "RESOURCE_EXHAUSTED: Failed to get configs for: 8 out of 41
// instructions. See logs for all failures. Example failure: " and on the next line "Out of memory
// while trying to allocate 12.02GiB with allocator GPU_0_bfc on device 0."
constexpr std::string_view kAutotunerFailed = "Failed to get configs for: ";

bool autotuner_example(OomReport& oom, std::string_view line) {
  if (oom.request_bytes) return false;
  oom.request_bytes = size_after(line, "Out of memory while trying to allocate ");
  return oom.request_bytes.has_value();
}

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
  if (contains(line, kAutotunerFailed)) {
    oom.follow_up_lines = 1;  // its example failure, on the next line
    return oom;
  }
  oom.request_bytes = size_after(line, "Out of memory while trying to allocate ");
  if (!oom.request_bytes) oom.request_bytes = size_after(line, "Failed to allocate request for ");
  if (!oom.request_bytes && !contains(line, "memory")) return std::nullopt;
  return oom;
}

}  // namespace

namespace {

void add_oom_dialects(Registry& registry) {
  registry.add_oom_dialect({.name = "JAX/XLA",
                            .rank = 20,
                            .recognise = &jax_xla,
                            .follow_up = &autotuner_example,
                            .advice = {{.framework = "JAX/XLA",
                                        .fragmentation = std::string(jax::kFragmentationAdvice),
                                        .capacity = std::string(jax::kCapacityAdvice),
                                        .sizing_setting = "XLA_PYTHON_CLIENT_PREALLOCATE=false (or "
                                                          "XLA_PYTHON_CLIENT_MEM_FRACTION=...)"}}});
}

// `xla`, over every backend that serves an adaptor.
void add_backends(Registry& registry) {
  std::vector<std::string> upstreams;
  for (const BackendInfo& b : registry.backends()) {
    if (b.serves_upstream) upstreams.push_back(b.name);
  }
  registry.add_backend(jax::xla_backend_info(upstreams));
}

void add_trace_formats(Registry& registry) {
  registry.add_trace_format({.name = jax::kXlaFormatName,
                             .described_as = "XLA's allocator log (xla-log.txt)",
                             .detect = &jax::is_xla_log,
                             .load = &jax::load_xla_log,
                             .replayed_by = jax::kBackendName,
                             // XLA's log carries C++ stacks without names, not the program's lines
                             .no_frames_words = "(XLA's allocator log names no Python lines)",
                             .shifted_pairs = true,
                             .side_streams = true});
}

Framework describe_jax() {
  return {
      .name = "JAX",
      .summary =
          "its OOM messages read by exec (XLA's RESOURCE_EXHAUSTED, preallocation), "
          "its pool sized to the budget's card, XLA's allocator summary at an OOM, XLA's "
          "allocator modelled (xla), its allocator logs read (xla)",
      .add_backends = &add_backends,
      .add_trace_formats = &add_trace_formats,
      .add_oom_dialects = &add_oom_dialects,
      .card_sizing = CardSizing{.variables = &jax::card_variables, .hint = "jax"},
      // JAX sets TF_CPP_MIN_LOG_LEVEL=1 unless it is set: 0 shows the BFC allocator's chunk
      // map and pool summary at an OOM (and XLA's other INFO lines, kept apart).
      .program_log = ProgramLog{.level_variable = "TF_CPP_MIN_LOG_LEVEL",
                                .set = {{"TF_CPP_MIN_LOG_LEVEL", "0"}},
                                .is_log_line = &jax::is_xla_info_line,
                                .record = {{"TF_CPP_VMODULE", "bfc_allocator=4"}},
                                .recording = &jax::recording_variables,
                                .file = "xla-log.txt",
                                .line_time = &jax::xla_line_time,
                                .is_trace = true,
                                .seen_as = "jax"},
      .cache_words = jax::cache_words(),
      .exec_help =
          "JAX programs, with no change to the program:\n"
          "  JAX sizes XLA's memory pool (and the memory limit XLA compiles under) from the\n"
          "  device's total memory, 75% of it by default: exec scales\n"
          "  XLA_PYTHON_CLIENT_MEM_FRACTION (or your XLA_CLIENT_MEM_FRACTION) by budget/total\n"
          "  (a hair under, as JAX counts the total a little over CUDA),\n"
          "  so that the pool is the one a card of the budget's size would have. Unless you\n"
          "  set TF_CPP_MIN_LOG_LEVEL, it is 0 for the program, so that XLA's BFC allocator\n"
          "  prints its pool at an OOM: those INFO lines go to xla-log.txt in the run folder,\n"
          "  not to your terminal, and the OOM's diagnosis reads the pool's summary (in use,\n"
          "  free, its largest free piece, its limit). While exec records (not under\n"
          "  --no-snapshot) the pool's every request and free is logged too: the log is the\n"
          "  run's snapshot, replayed on the model of XLA's allocator (backend xla) with each\n"
          "  of JAX's settings on a card of the budget (its defaults,\n"
          "  XLA_PYTHON_CLIENT_PREALLOCATE=false, XLA_PYTHON_CLIENT_ALLOCATOR=platform, and a\n"
          "  larger XLA_PYTHON_CLIENT_MEM_FRACTION where the process leaves room for one), and\n"
          "  --check-remedy reruns the program with the one the model names. XLA also writes\n"
          "  what it compiled to xla-dump/ beside the log (XLA_FLAGS gains --xla_dump_to unless\n"
          "  it has one): at an OOM in a step, the step's buffers at its peak, by your lines,\n"
          "  are what filled memory, and the line that called the step is the OOM's place (JAX\n"
          "  raises it where a result is next read); only that step's files are kept.\n"
          "  fit exec and frontier exec predict from runs' logs (fit exec's first run and a\n"
          "  second, frontier exec's top run); the second goes as far as the first run, each\n"
          "  request grown in proportion to the value, would fit (where that is 8 or more; else\n"
          "  the next value), since at the smallest values XLA's step is its own choice around\n"
          "  what does not grow. The compiler's threads (the autotuner's candidates) are not\n"
          "  paired between the runs: each is made at its size at the second run, and may be\n"
          "  refused. XLA compiles a step to the room it is given, so with the\n"
          "  pool preallocated those runs are compiled under a tight limit (XLA_FLAGS gains\n"
          "  --xla_gpu_memory_limit_slop_factor=1 unless it sets that factor; a jaxlib too old\n"
          "  for that flag stops at it): their step holds the least XLA can make it hold, which\n"
          "  grows with the batch as the step at the largest batch must.\n",
      .program_modelling = ProgramModelling{.owner = "XLA",
                                            .format = jax::kXlaFormatName,
                                            .model = &jax::model_xla_run,
                                            .check_remedy = &jax::check_xla_remedy,
                                            .remedy_words = &jax::xla_remedy_line,
                                            .fit_series = &jax::fit_xla_series,
                                            .frontier_series = &jax::frontier_xla_series,
                                            .far_second_run = jax::kFarSecondRun}};
}

}  // namespace

OOMLAB_REGISTER_FRAMEWORK(jax)

}  // namespace oomlab
