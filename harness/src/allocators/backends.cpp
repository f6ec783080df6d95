#include "allocators/backends.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "allocators/device_factories.hpp"
#include "allocators/sim_allocator.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

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
          .reserves_on_allocate = false,  // pages land on the device when touched
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

void add_engine_backends(Registry& registry) {
  registry.add_backend({.kind = BackendKind::cuda,
                        .name = "cuda",
                        .summary = "cudaMalloc / cudaFree; the budget is held by a ballast",
                        .holds_ballast = true,
                        .serves_upstream = true,
                        .make = &make_cuda_backend});
  registry.add_backend(async_backend());
  registry.add_backend(managed_backend());
  registry.add_backend(sim_backend());
}

// auto's rule in words: first the models of a recorded allocator, each for what it replays.
BackendInfo auto_backend(const Registry& registry) {
  std::string rule;
  for (const BackendInfo& b : registry.backends()) {
    if (!b.replays.empty()) rule += fmt::format("{} for {}, else ", b.name, b.replays);
  }
  return {.kind = BackendKind::automatic,
          .name = "auto",
          .summary = rule + "async where a CUDA device is present, otherwise sim (with a notice)",
          .needs_device = false};
}

}  // namespace

const std::list<BackendInfo>& backend_catalog() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& registry = Registry::global();
    add_engine_backends(registry);
    for (const Framework& framework : registry.frameworks()) {
      if (framework.add_backends != nullptr) framework.add_backends(registry);
    }
    registry.add_backend(auto_backend(registry));
  });
  return Registry::global().backends();
}

const BackendInfo& backend_info(BackendKind kind) {
  const auto& catalog = backend_catalog();
  const auto it = std::find_if(catalog.begin(), catalog.end(),
                               [&](const BackendInfo& b) { return b.kind == kind; });
  if (it == catalog.end()) {
    throw Error(ErrorKind::internal, fmt::format("no backend numbered {}", static_cast<int>(kind)));
  }
  return *it;
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
  if (options.values().contains("total")) return options.bytes("total");
  // A backend that models no card of its own (a plugin's): the sim's card.
  return Params(backend_info(BackendKind::sim).options).bytes("total");
}

}  // namespace oomlab
