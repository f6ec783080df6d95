// PyTorch, registered: what it brings to oomlab (the wing's rooms are in ARCHITECTURE.md). The
// model of its caching allocator as the backend `torch`, its memory snapshots as the trace format
// `pytorch`, its OOM messages as dialects exec reads.
#include <string>
#include <vector>

#include "exec/exec_fit.hpp"
#include "oomlab/registry.hpp"
#include "pytorch/exec/oom_dialect.hpp"
#include "pytorch/exec/program_model.hpp"
#include "pytorch/exec/program_shim.hpp"
#include "pytorch/exec/remedy_check.hpp"
#include "pytorch/exec/torchrun.hpp"
#include "pytorch/face/alloc_conf.hpp"
#include "pytorch/face/face.hpp"
#include "pytorch/model/oom_words.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/settings/series_table.hpp"
#include "pytorch/settings/torch_settings.hpp"
#include "pytorch/trace/pytorch_import.hpp"

namespace oomlab::torch {

namespace {

// Over any backend that can serve an adaptor (the engine's are in the catalogue by now).
void add_backends(Registry& registry) {
  std::vector<std::string> upstreams;
  for (const BackendInfo& b : registry.backends()) {
    if (b.serves_upstream) upstreams.push_back(b.name);
  }
  BackendInfo torch = torch::torch_backend_info(upstreams);
  torch.check_settings = &check_remedies;  // its settings, each at the budget of an OOM
  registry.add_backend(std::move(torch));
}

void add_trace_formats(Registry& registry) {
  registry.add_trace_format(
      {.name = torch::kPytorchFormatName,
       .described_as = "a PyTorch snapshot as pickle or JSON",
       .detect = &torch::is_pytorch_snapshot,
       .load =
           [](const std::filesystem::path& path, const trace::LoadOptions& options) {
             return torch::load_pytorch_snapshot(
                 path, options.level, {.device = options.device, .option = options.device_option},
                 trace::StopPoll(options.check_stop));
           },
       .replayed_by = torch::kBackendName,
       .has_levels = true,
       .no_frames_words = "(record stacks: exec --snapshot-stacks python, or "
                          "_record_memory_history(stacks='python')), or allocated on autograd's "
                          "backward thread"});
}

void add_oom_dialects(Registry& registry) {
  for (OomDialect& dialect : pytorch_oom_dialects())
    registry.add_oom_dialect(std::move(dialect));
}

// exec's model of the program's snapshots, and the searches' answers from a series of them.
void model_snapshots(RunResult& run, const std::atomic<bool>* stop) {
  model_program(run, {.stop = stop});
}

FitResult fit_series(const SeriesQuestion& q) {
  return fit_as_recorded(q.series, q.range, q.budget_bytes, q.stop, q.rule);
}

std::optional<std::uint64_t> frontier_series(const SeriesQuestion& q) {
  return frontier_as_recorded(q.series, q.range.lo, q.budget_bytes, q.stop, q.rule);
}

Framework describe_pytorch() {
  return {.name = "PyTorch",
          .summary =
              "its CUDA caching allocator modelled (torch), its memory snapshots read "
              "(pytorch)",
          .add_backends = &add_backends,
          .add_trace_formats = &add_trace_formats,
          .add_oom_dialects = &add_oom_dialects,
          .packages = {"torch/"},
          // Its module plumbing between two modules' forward(): not worth a reader's line.
          .plumbing_frames = {"torch/nn/modules/module.py:"},
          // What gathers a stack with stacks='all' (the names PyTorch's own memory_viz.py leaves
          // out of its flame graphs), and its caching allocator, which asks for it.
          .recording_frames = {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
                               "c10::GatheredContext", "CUDACachingAllocator::"},
          // Its symmetric memory's NVLink multicast, as exec turns NCCL's and NVSHMEM's off.
          .program_environment = {{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}},
          .cache_words = torch::cache_words(),
          .models_snapshots = true,
          .program_shim = torch::program_shim(),
          .exec_help = torch::pytorch_exec_help(),
          .launcher = torch::torchrun(),
          .settings_spelling =
              SettingsSpelling{
                  .backend = torch::kBackendName,
                  .flag = "--alloc-conf",
                  .help = "PyTorch's PYTORCH_CUDA_ALLOC_CONF as your job sets it "
                          "(\"expandable_segments:True,max_split_size_mb:128\"): the torch "
                          "allocator with those settings",
                  .assignments = &torch::torch_assignments},
          .program_modelling = ProgramModelling{.owner = "PyTorch",
                                                .format = torch::kPytorchFormatName,
                                                .model = &model_snapshots,
                                                .check_remedy = &check_remedy,
                                                .remedy_words = &remedy_check_line,
                                                .fit_series = &fit_series,
                                                .frontier_series = &frontier_series},
          .add_commands = &torch::add_pytorch_commands};
}

}  // namespace

}  // namespace oomlab::torch

namespace oomlab::torch {
OOMLAB_REGISTER_FRAMEWORK(pytorch)
}  // namespace oomlab::torch
