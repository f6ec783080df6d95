#include "pytorch/model/torch_backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "oomlab/error.hpp"
#include "pytorch/model/allocator_device_memory.hpp"
#include "pytorch/model/device_pages.hpp"
#include "pytorch/model/torch_allocator.hpp"
#include "pytorch/model/torch_options.hpp"

namespace oomlab::torch {

namespace {

const BackendInfo& upstream_of(const Params& options) {
  return *find_backend(options.choice("upstream"));
}

BackendKind upstream_kind(const Params& options) {
  return upstream_of(options).kind;
}

// Segments from the upstream the options name, built through the catalogue like any backend; on
// a device, expandable segments map pages of the CUDA virtual-memory API, as PyTorch does (over
// cuda alone: check_upstream refuses the others).
std::unique_ptr<Allocator> make_torch(const Params& options, const BackendSite& site) {
  const TorchConfig config = resolve_torch(options, site.recorded).config;
  check_upstream(options, config.expandable_segments);  // the recorded settings' too
  const BackendInfo& upstream_info = upstream_of(options);
  Params upstream_options(upstream_info.options);
  BackendSite upstream_site = site;
  if (upstream_info.kind == BackendKind::sim) {
    upstream_options.set("total", Bytes{options.bytes("total")});
    upstream_site.budget_bytes =
        torch_sim_capacity(config, options.bytes("total"), site.budget_bytes);
  }
  std::unique_ptr<Allocator> upstream =
      make_backend(upstream_info.kind, upstream_options, upstream_site);
  if (!config.expandable_segments || upstream->simulated()) {
    return std::make_unique<TorchAllocator>(config, std::move(upstream), site.budget_bytes,
                                            site.stream);
  }
  const std::uint64_t total = upstream->state().device_total_bytes;
  auto segments = std::make_unique<AllocatorDeviceMemory>(std::move(upstream), site.stream, total);
  return std::make_unique<TorchAllocator>(config, make_device_pages(site, std::move(segments)),
                                          site.budget_bytes, false);
}

// A snapshot's expandable_segments over an upstream that cannot map pages is refused here,
// before the run, as the same option given by the user is.
std::vector<std::string> settle_torch(Params& options, const RecordedSettings* recorded) {
  ResolvedTorch resolved = resolve_torch(options, recorded);
  check_upstream(resolved.effective, resolved.config.expandable_segments);
  // PyTorch collects cached blocks only as its fraction cap fills: on a card of its own the
  // setting does nothing, and a run that looks like it tried it must say so.
  if (resolved.config.garbage_collection_threshold != 0.0 &&
      resolved.config.budget_by != BudgetBy::fraction) {
    resolved.notes.push_back(fmt::format(
        "torch: garbage_collection_threshold={:g} has no effect unless the budget is a memory "
        "fraction (PyTorch collects only under torch.cuda.set_per_process_memory_fraction): ask "
        "for one with -a torch:budget_by=fraction (the budget is then the fraction's cap)",
        resolved.config.garbage_collection_threshold));
  }
  options = std::move(resolved.effective);
  return std::move(resolved.notes);
}

// What a frontier was asked under: PyTorch's settings, and a fraction cap when it was one (a cap
// on the modelled card, not a card).
std::string settings_words(const Params& options) {
  const std::string conf = alloc_conf(options);
  std::string out = conf.empty() ? " with PyTorch's defaults"
                                 : fmt::format(" with PYTORCH_CUDA_ALLOC_CONF={}", conf);
  if (options.choice("budget_by") == "fraction")
    out += " under torch.cuda.set_per_process_memory_fraction (the budget is its cap)";
  return out;
}

std::string approximate_words(const Params& /*options*/, ByteRange range) {
  return fmt::format(
      "backend=async is a model of the driver's pool from measurements, and PyTorch's own "
      "frontier lies in {}..{} (docs/torch.md)",
      format_bytes(range.low_bytes), format_bytes(range.high_bytes));
}

std::vector<std::string> contract_options(const std::vector<std::string>& upstreams) {
  std::vector<std::string> options = {"expandable_segments=true", "max_split_size=20MiB",
                                      "garbage_collection_threshold=0.5,budget_by=fraction",
                                      "backend=async"};
  for (const std::string& upstream : upstreams) {
    if (upstream == "sim") continue;  // the default
    options.push_back("upstream=" + upstream);
    if (upstream == "cuda") {
      options.push_back("upstream=cuda,expandable_segments=true");  // the virtual-memory API
      options.push_back("upstream=cuda,backend=async");
    }
  }
  return options;
}

}  // namespace

BackendInfo torch_backend_info(const std::vector<std::string>& upstreams) {
  return {.name = kBackendName,
          .summary =
              "a model of PyTorch's CUDA caching allocator (or its cudaMallocAsync "
              "backend) over any other backend: the sim by default, or upstream=cuda, async, "
              "managed on the device",
          .options = torch_option_spec(upstreams),
          .needs_device = false,
          // Each way it holds memory (garbage collection acts under a fraction cap only), and
          // over every upstream the catalogue offers it.
          .contract_options = contract_options(upstreams),
          .validate = &validate_torch_options,
          .make = &make_torch,
          .upstream = &upstream_kind,
          .settle = &settle_torch,
          .frontier_range = &frontier_range,
          .replays = "a PyTorch snapshot (replay --trace)",
          .auto_notice =
              "a PyTorch snapshot: replayed through 'torch', oomlab's model of PyTorch's "
              "caching allocator, on a simulated card (no GPU used); -a async, cuda or sim "
              "replays its requests on that allocator instead",
          .settings_words = &settings_words,
          .approximate_words = &approximate_words};
}

BackendKind torch_kind() {
  static const BackendKind kKind = [] {
    const BackendInfo* info = find_backend(kBackendName);
    if (info == nullptr) throw Error(ErrorKind::internal, "the torch backend is not registered");
    return info->kind;
  }();
  return kKind;
}

std::uint64_t torch_sim_capacity(const TorchConfig& config, std::uint64_t total_bytes,
                                 std::uint64_t budget_bytes) {
  // Under a fraction the card is whole and PyTorch caps itself; a card of the budget's size (a
  // ballast's) gives one 2 MiB page less than it reports free (measured on an H100: with 32, 256,
  // 1,024 and 4,096 pages free, cudaMalloc gave 31, 255, 1,023 and 4,095 of them).
  if (config.budget_by == BudgetBy::fraction) return std::max(total_bytes, budget_bytes);
  return budget_bytes > kDevicePageBytes ? budget_bytes - kDevicePageBytes : budget_bytes;
}

}  // namespace oomlab::torch
