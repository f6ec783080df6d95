#include "allocators/backends.hpp"

#include <algorithm>

#include "allocators/sim_allocator.hpp"

namespace oomlab {

namespace {

ParamDef flag_option(std::string name, std::string help) {
  return {.name = std::move(name),
          .type = ParamType::flag,
          .default_value = true,
          .help = std::move(help)};
}

std::vector<BackendInfo> make_catalog() {
  using namespace oomlab::literals;
  std::vector<BackendInfo> catalog;
  catalog.push_back({"cuda", "cudaMalloc / cudaFree; the budget is held by a ballast", {}, true});
  catalog.push_back(
      {"async",
       "cudaMallocFromPoolAsync / cudaFreeAsync from a pool made for the run, on its own stream",
       {{.name = "release_threshold",
         .type = ParamType::bytes,
         .default_value = Bytes{0},
         .help = "memory the pool keeps across synchronisations (CUDA's default 0; max keeps all)",
         .accepts_max = true},
        flag_option("reuse_follow_events", "reuse memory freed on another stream after an event"),
        flag_option("reuse_opportunistic", "reuse memory whose free has completed, across streams"),
        flag_option("reuse_internal_deps", "let the driver insert dependencies to reuse memory")},
       true});
  catalog.push_back({"managed",
                     "cudaMallocManaged / cudaFree, capped at the budget (never oversubscribed)",
                     {{.name = "advise",
                       .type = ParamType::choice,
                       .default_value = std::string("none"),
                       .help = "cudaMemAdvise for every allocation, towards the run's device",
                       .choices = {"none", "preferred-location", "accessed-by", "read-mostly"}},
                      {.name = "prefetch",
                       .type = ParamType::flag,
                       .default_value = false,
                       .help = "cudaMemPrefetchAsync each allocation to the device"}},
                     true});
  catalog.push_back(
      {"sim",
       "host-side model of cudaMalloc's 2 MiB pages: no GPU needed, deterministic",
       {{.name = "page",
         .type = ParamType::bytes,
         .default_value = Bytes{2_MiB},
         .help = "the physical page of the model"},
        {.name = "total",
         .type = ParamType::bytes,
         .default_value = Bytes{80_GiB},
         .help = "the card being modelled: what --budget=N% and --budget=all refer to"}},
       false});
  catalog.push_back(
      {"auto", "async where a CUDA device is present, otherwise sim (with a notice)", {}, false});
  return catalog;
}

}  // namespace

const std::vector<BackendInfo>& backend_catalog() {
  static const std::vector<BackendInfo> kCatalog = make_catalog();
  return kCatalog;
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

bool uses_ballast(std::string_view name) {
  return name == "cuda" || name == "async";
}

}  // namespace oomlab
