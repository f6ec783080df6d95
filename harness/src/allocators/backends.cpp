#include "allocators/backends.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "allocators/device_factories.hpp"
#include "allocators/sim_allocator.hpp"
#include "allocators/torch/torch_backend.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {

ParamDef flag_option(std::string name, std::string help) {
  return {.name = std::move(name),
          .type = ParamType::flag,
          .default_value = true,
          .help = std::move(help)};
}

BackendInfo async_backend() {
  return {
      .kind = BackendKind::async,
      .name = "async",
      .summary =
          "cudaMallocFromPoolAsync / cudaFreeAsync from a pool made for the run, on its "
          "own stream",
      .options =
          {{.name = "release_threshold",
            .type = ParamType::bytes,
            .default_value = Bytes{0},
            .help =
                "memory the pool keeps across synchronisations (CUDA's default 0; max keeps all)",
            .accepts_max = true},
           flag_option("reuse_follow_events",
                       "reuse memory freed on another stream after an event"),
           flag_option("reuse_opportunistic",
                       "reuse memory whose free has completed, across streams"),
           flag_option("reuse_internal_deps",
                       "let the driver insert dependencies to reuse memory")},
      .holds_ballast = true,
      .serves_upstream = true,
      .make = &make_async_backend};
}

BackendInfo managed_backend() {
  return {.kind = BackendKind::managed,
          .name = "managed",
          .summary = "cudaMallocManaged / cudaFree, capped at the budget (never oversubscribed)",
          .options = {{.name = "advise",
                       .type = ParamType::choice,
                       .default_value = std::string("none"),
                       .help = "cudaMemAdvise for every allocation, towards the run's device",
                       .choices = {"none", "preferred-location", "accessed-by", "read-mostly"}},
                      {.name = "prefetch",
                       .type = ParamType::flag,
                       .default_value = false,
                       .help = "cudaMemPrefetchAsync each allocation to the device"}},
          .serves_upstream = true,
          .make = &make_managed_backend};
}

BackendInfo sim_backend() {
  using namespace oomlab::literals;
  return {
      .kind = BackendKind::sim,
      .name = "sim",
      .summary = "host-side model of cudaMalloc's 2 MiB pages: no GPU needed, deterministic",
      .options = {{.name = "page",
                   .type = ParamType::bytes,
                   .default_value = Bytes{2_MiB},
                   .help = "the physical page of the model"},
                  {.name = "total",
                   .type = ParamType::bytes,
                   .default_value = Bytes{80_GiB},
                   .help = "the card being modelled: what --budget=N% and --budget=all refer to"}},
      .needs_device = false,
      .serves_upstream = true,
      .make = [](const Params& options, const BackendSite& site) {
        return make_sim_backend(options, site.budget_bytes);
      }};
}

std::vector<BackendInfo> make_catalog() {
  std::vector<BackendInfo> catalog;
  catalog.push_back({.kind = BackendKind::cuda,
                     .name = "cuda",
                     .summary = "cudaMalloc / cudaFree; the budget is held by a ballast",
                     .holds_ballast = true,
                     .serves_upstream = true,
                     .make = &make_cuda_backend});
  catalog.push_back(async_backend());
  catalog.push_back(managed_backend());
  catalog.push_back(sim_backend());
  // The adaptor over any of those (its `upstream` choices are their names).
  std::vector<std::string> upstreams;
  for (const BackendInfo& b : catalog) {
    if (b.serves_upstream) upstreams.push_back(b.name);
  }
  catalog.push_back(torch::torch_backend_info(upstreams));
  catalog.push_back({.kind = BackendKind::automatic,
                     .name = "auto",
                     .summary =
                         "torch for a PyTorch snapshot (replay --trace), else async where a CUDA "
                         "device is present, otherwise sim (with a notice)",
                     .needs_device = false});
  return catalog;
}

}  // namespace

const std::vector<BackendInfo>& backend_catalog() {
  static const std::vector<BackendInfo> kCatalog = make_catalog();
  return kCatalog;
}

const BackendInfo& backend_info(BackendKind kind) {
  const auto& catalog = backend_catalog();
  return *std::find_if(catalog.begin(), catalog.end(),
                       [&](const BackendInfo& b) { return b.kind == kind; });
}

const BackendInfo* find_backend(std::string_view name) {
  const auto& catalog = backend_catalog();
  const auto it = std::find_if(catalog.begin(), catalog.end(),
                               [&](const BackendInfo& b) { return b.name == name; });
  return it == catalog.end() ? nullptr : &*it;
}

std::unique_ptr<Allocator> make_sim_backend(const Params& options, std::uint64_t budget_bytes) {
  return std::make_unique<SimAllocator>(
      SimAllocator::Options{.capacity_bytes = budget_bytes,
                            .page_bytes = options.bytes("page"),
                            .device_total_bytes = options.bytes("total")});
}

std::unique_ptr<Allocator> make_backend(BackendKind kind, const Params& options,
                                        const BackendSite& site) {
  const BackendInfo& info = backend_info(kind);
  if (info.make == nullptr) {
    throw Error(ErrorKind::internal, fmt::format("'{}' is resolved before a run", info.name));
  }
  return info.make(options, site);
}

BackendKind memory_source(BackendKind kind, const Params& options) {
  const BackendInfo& info = backend_info(kind);
  return info.upstream != nullptr ? info.upstream(options) : kind;
}

bool uses_device(BackendKind kind, const Params& options) {
  return backend_info(memory_source(kind, options)).needs_device;
}

bool holds_ballast(BackendKind kind, const Params& options) {
  return backend_info(memory_source(kind, options)).holds_ballast;
}

std::uint64_t simulated_total_bytes(BackendKind /*kind*/, const Params& options) {
  return options.bytes("total");
}

}  // namespace oomlab
