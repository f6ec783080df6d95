#include "jax/model/xla_backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "jax/model/xla_allocator.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::jax {

namespace {

constexpr std::uint64_t kLimitGranularity = std::uint64_t{2} << 20;

const BackendInfo& upstream_of(const Params& options) {
  const BackendInfo* info = find_backend(options.choice("upstream"));
  if (info == nullptr || !info->serves_upstream) {
    throw Error(ErrorKind::usage, fmt::format("allocator 'xla': upstream={} cannot serve XLA's "
                                              "regions",
                                              options.choice("upstream")));
  }
  return *info;
}

BackendKind upstream_kind(const Params& options) {
  return upstream_of(options).kind;
}

void validate_xla_options(const Params& options) {
  const double fraction = options.real("fraction");
  if (!(fraction > 0.0) || fraction > 1.0) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'xla': fraction={:g} is not a share of the card (0 < "
                            "fraction <= 1)",
                            fraction));
  }
  const BackendInfo& upstream = upstream_of(options);
  if (options.bytes("outside") != 0 && upstream.kind != BackendKind::sim) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'xla': outside= is the sim's (upstream={} takes what the "
                            "device itself has left)",
                            options.choice("upstream")));
  }
}

void validate_xla_card(const Params& options, std::uint64_t card_bytes) {
  const std::uint64_t outside = options.bytes("outside");
  if (outside != 0 && outside >= card_bytes && upstream_of(options).kind == BackendKind::sim) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'xla': outside={} is no less than the card ({}): the "
                            "process would leave the pool nothing",
                            format_bytes(outside), format_bytes(card_bytes)));
  }
}

std::unique_ptr<Allocator> make_xla(const Params& options, const BackendSite& site) {
  const BackendInfo& upstream_info = upstream_of(options);
  Params upstream_options(upstream_info.options);
  // The sim is the card; the pool's regions come from what the process leaves of it.
  BackendSite upstream_site = site;
  if (upstream_info.kind == BackendKind::sim) {
    // A card no larger than what lies beside the pool leaves it nothing: every request refused
    // (a search's smaller budgets; a user's own run is refused first, validate_xla_card).
    const std::uint64_t outside = options.bytes("outside");
    upstream_options.set("total", Bytes{site.budget_bytes});
    upstream_site.budget_bytes = site.budget_bytes > outside ? site.budget_bytes - outside : 0;
  }
  std::unique_ptr<Allocator> upstream =
      make_backend(upstream_info.kind, upstream_options, upstream_site);
  return std::make_unique<XlaAllocator>(pool_config(options, site.budget_bytes),
                                        std::move(upstream), site.stream);
}

std::string settings_words(const Params& options) {
  const std::string beside =
      options.bytes("outside") == 0
          ? std::string()
          : fmt::format(", {} beside the pool", format_bytes(options.bytes("outside")));
  if (options.choice("allocator") == "platform")
    return fmt::format(" with XLA_PYTHON_CLIENT_ALLOCATOR=platform{}", beside);
  std::vector<std::string> set;
  if (options.real("fraction") != 0.75)
    set.push_back(fmt::format("XLA_PYTHON_CLIENT_MEM_FRACTION={:g}", options.real("fraction")));
  if (!options.flag("preallocate")) set.emplace_back("XLA_PYTHON_CLIENT_PREALLOCATE=false");
  if (options.flag("preallocate") && !options.flag("spatial"))
    set.emplace_back("--xla_gpu_enable_allocator_spatial_partitioning=false");
  if (set.empty()) return fmt::format(" with JAX's defaults{}", beside);
  return fmt::format(" with {}{}", fmt::join(set, ", "), beside);
}

// The log's own settings (preallocated or grown, the platform allocator) as the defaults of what
// the user left alone.
std::vector<std::string> settle_xla(Params& options, const RecordedSettings* recorded) {
  if (recorded == nullptr) return {};
  std::vector<std::string> taken;
  for (const char* name : {"preallocate", "allocator"}) {
    const auto it = recorded->options.find(name);
    if (it == recorded->options.end() || options.was_set(name)) continue;
    options.set(name, it->second);
    taken.push_back(fmt::format("{}={}", name, format_param_value(it->second)));
  }
  if (taken.empty()) return {};
  return {
      fmt::format("xla: replayed with the log's own settings ({}, as the program ran); "
                  "options given with --allocator win",
                  fmt::join(taken, ", "))};
}

ParamSpec xla_option_spec(const std::vector<std::string>& upstreams) {
  return {
      {.name = "allocator",
       .type = ParamType::choice,
       .default_value = std::string("bfc"),
       .help = "XLA_PYTHON_CLIENT_ALLOCATOR: bfc, XLA's pool (JAX's default); platform, each "
               "buffer asked of the device on its own",
       .choices = {"bfc", "platform"}},
      {.name = "fraction",
       .type = ParamType::real,
       .default_value = 0.75,
       .help = "XLA_PYTHON_CLIENT_MEM_FRACTION: the pool's limit as a share of the card"},
      {.name = "preallocate",
       .type = ParamType::flag,
       .default_value = true,
       .help = "XLA_PYTHON_CLIENT_PREALLOCATE: the whole limit taken at the first request "
               "(false: regions of 2 MiB, doubling, as needed)"},
      {.name = "spatial",
       .type = ParamType::flag,
       .default_value = true,
       .help = "with preallocation, XLA's spatial partitioning (its default): holes first, then "
               "the untouched rest of the pool"},
      {.name = "outside",
       .type = ParamType::bytes,
       .default_value = Bytes{0},
       .help = "what the process holds beside the pool (its CUDA context, libraries): the pool's "
               "limit is still its share of the card, its regions come from the rest (sim only)"},
      {.name = "upstream",
       .type = ParamType::choice,
       .default_value = std::string("sim"),
       .help = fmt::format("where regions come from: any backend that hands out memory ({}): sim "
                           "needs no GPU and is deterministic",
                           fmt::join(upstreams, ", ")),
       .choices = upstreams},
  };
}

std::vector<std::string> contract_options(const std::vector<std::string>& upstreams) {
  std::vector<std::string> options = {"preallocate=false", "spatial=false", "allocator=platform",
                                      "fraction=0.5", "outside=64MiB"};
  for (const std::string& upstream : upstreams) {
    if (upstream != "sim") options.push_back("upstream=" + upstream);
  }
  return options;
}

}  // namespace

std::optional<BfcConfig> pool_config(const Params& options, std::uint64_t card_bytes) {
  if (options.choice("allocator") == "platform") return std::nullopt;
  const auto fraction = static_cast<float>(options.real("fraction"));
  const auto share = static_cast<std::uint64_t>(static_cast<double>(card_bytes) * fraction);
  const std::uint64_t limit =
      (share + kLimitGranularity - 1) / kLimitGranularity * kLimitGranularity;
  const bool preallocate = options.flag("preallocate");
  return BfcConfig{.limit_bytes = limit,
                   .allow_growth = !preallocate,
                   .spatial = preallocate && options.flag("spatial")};
}

BackendInfo xla_backend_info(const std::vector<std::string>& upstreams) {
  return {.name = kBackendName,
          .summary =
              "a model of XLA's allocator as JAX sets it up (its BFC pool, a share of "
              "the card, preallocated or grown; or the platform allocator) over any "
              "other backend: the sim by default, or upstream=cuda, async, managed",
          .options = xla_option_spec(upstreams),
          .needs_device = false,
          .oom_source = "XLA's pool",
          .contract_options = contract_options(upstreams),
          .validate = &validate_xla_options,
          .validate_card = &validate_xla_card,
          .make = &make_xla,
          .upstream = &upstream_kind,
          .settle = &settle_xla,
          .replays = "XLA's allocator log (replay --trace xla-log.txt)",
          .auto_notice =
              "XLA's allocator log: replayed through 'xla', oomlab's model of XLA's "
              "allocator as JAX sets it up, on a simulated card (no GPU used)",
          .settings_words = &settings_words};
}

}  // namespace oomlab::jax
