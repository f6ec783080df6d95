// PyTorch, registered: what it brings to oomlab (the wing's rooms are in ARCHITECTURE.md). The
// model of its caching allocator as the backend `torch`, its memory snapshots as the trace format
// `pytorch`, its OOM messages as dialects exec reads.
#include <string>
#include <vector>

#include "oomlab/registry.hpp"
#include "pytorch/exec/oom_dialect.hpp"
#include "pytorch/exec/program_shim.hpp"
#include "pytorch/exec/torchrun.hpp"
#include "pytorch/model/oom_words.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/trace/pytorch_import.hpp"

namespace oomlab {

namespace {

// Over any backend that can serve an adaptor (the engine's are in the catalogue by now).
void add_backends(Registry& registry) {
  std::vector<std::string> upstreams;
  for (const BackendInfo& b : registry.backends()) {
    if (b.serves_upstream) upstreams.push_back(b.name);
  }
  registry.add_backend(torch::torch_backend_info(upstreams));
}

void add_trace_formats(Registry& registry) {
  registry.add_trace_format(
      {.name = trace::kPytorchFormatName,
       .described_as = "a PyTorch snapshot as pickle or JSON",
       .detect = &trace::is_pytorch_snapshot,
       .load =
           [](const std::filesystem::path& path, const trace::LoadOptions& options) {
             return trace::load_pytorch_snapshot(
                 path, options.level, {.device = options.device, .option = options.device_option},
                 trace::StopPoll(options.check_stop));
           },
       .replayed_by = torch::kBackendName,
       .has_levels = true});
}

void add_oom_dialects(Registry& registry) {
  for (OomDialect& dialect : pytorch_oom_dialects())
    registry.add_oom_dialect(std::move(dialect));
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
          .launcher = torch::torchrun()};
}

}  // namespace

}  // namespace oomlab

namespace oomlab {
OOMLAB_REGISTER_FRAMEWORK(pytorch)
}  // namespace oomlab
