#include "pytorch/model/torch_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <optional>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"
#include "pytorch/model/async_model.hpp"
#include "pytorch/model/torch_backend.hpp"

namespace oomlab::torch {

ParamSpec torch_option_spec(const std::vector<std::string>& upstreams) {
  return {
      {.name = "expandable_segments",
       .type = ParamType::flag,
       .default_value = false,
       .help =
           "one segment per stream that grows and shrinks by pages (2 MiB small, 20 MiB large)"},
      {.name = "max_split_size",
       .type = ParamType::bytes,
       .default_value = Bytes{kUnlimited},
       .help = "blocks this large or larger are never split (PyTorch's max_split_size_mb; "
               "max: no limit)",
       .accepts_max = true},
      {.name = "roundup_power2_divisions",
       .type = ParamType::integer,
       .default_value = std::int64_t{0},
       .help = "round requests up to this many steps between powers of two (0: to 512 B)",
       .min_integer = 0},
      {.name = "garbage_collection_threshold",
       .type = ParamType::real,
       .default_value = 0.0,
       .help = "under a fraction cap, free the oldest cached segments past this share of it "
               "(0: off)"},
      {.name = "backend",
       .type = ParamType::choice,
       .default_value = std::string("native"),
       .help = "native: the caching allocator; async: PyTorch's cudaMallocAsync backend",
       .choices = {"native", "async"}},
      {.name = "upstream",
       .type = ParamType::choice,
       .default_value = std::string("sim"),
       .help = fmt::format("where segments come from: any backend that hands out memory ({}; "
                           "not torch itself): sim needs no GPU and is deterministic; on a "
                           "device, expandable_segments needs cuda (pages of the CUDA "
                           "virtual-memory API under the ballast) or sim",
                           fmt::join(upstreams, ", ")),
       .choices = upstreams},
      {.name = "budget_by",
       .type = ParamType::choice,
       .default_value = std::string("device"),
       .help = "device: a card of the budget's size; fraction: set_per_process_memory_fraction, "
               "checked by PyTorch before it asks the device",
       .choices = {"device", "fraction"}},
      {.name = "max_non_split_rounding",
       .type = ParamType::bytes,
       .default_value = Bytes{20_MiB},
       .help = "how much larger than a request an unsplittable block may be and still serve it"},
      {.name = "large_segment_size",
       .type = ParamType::bytes,
       .default_value = Bytes{20_MiB},
       .help = "the segment of a request of 1 to 10 MiB (PyTorch's large_segment_size_mb)"},
      {.name = "total",
       .type = ParamType::bytes,
       .default_value = Bytes{80_GiB},
       .help = "upstream=sim: the card being modelled (--budget N% and all)"},
  };
}

void validate_torch_options(const Params& options) {
  check_upstream(options, options.flag("expandable_segments"));
  const std::uint64_t split = options.bytes("max_split_size");
  if (split < kSmallestMaxSplitBytes) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'torch': max_split_size {} is under 20 MiB, PyTorch's "
                            "smallest",
                            format_bytes(split)));
  }
  const double gc = options.real("garbage_collection_threshold");
  if (!(gc >= 0.0 && gc < 1.0)) {
    throw Error(
        ErrorKind::usage,
        fmt::format("allocator 'torch': garbage_collection_threshold {} is not in [0, 1)", gc));
  }
  const std::int64_t divisions = options.integer("roundup_power2_divisions");
  if (divisions != 0 && !std::has_single_bit(static_cast<std::uint64_t>(divisions))) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'torch': roundup_power2_divisions {} is not a power of two "
                            "(or 0)",
                            divisions));
  }
  for (const char* name : {"max_split_size", "max_non_split_rounding"}) {
    if (options.bytes(name) != kUnlimited && options.bytes(name) % 1_MiB != 0) {
      throw Error(ErrorKind::usage,
                  fmt::format("allocator 'torch': {} must be whole MiB, as PyTorch takes it "
                              "({}_mb)",
                              name, name));
    }
  }
  for (const char* name : {"max_non_split_rounding", "large_segment_size"}) {
    if (options.bytes(name) < 2_MiB || options.bytes(name) % 2_MiB != 0) {
      throw Error(ErrorKind::usage,
                  fmt::format("allocator 'torch': {} must be a multiple of 2 MiB", name));
    }
  }
}

ParamSpec torch_option_spec() {
  return backend_info(torch_kind()).options;
}

namespace {

std::vector<std::string> upstream_names() {
  std::vector<std::string> names;
  for (const BackendInfo& b : backend_catalog()) {
    if (b.serves_upstream) names.push_back(b.name);
  }
  return names;
}

}  // namespace

void check_upstream(const Params& options, bool expandable_segments) {
  const std::string& name = options.choice("upstream");
  const BackendInfo* upstream = find_backend(name);
  if (upstream == nullptr || !upstream->serves_upstream) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'torch': upstream={} cannot serve torch's segments{} (one "
                            "of: {})",
                            name, name == "torch" ? " (torch over torch)" : "",
                            fmt::join(upstream_names(), ", ")));
  }
  if (expandable_segments && upstream->kind != BackendKind::sim &&
      upstream->kind != BackendKind::cuda) {
    throw Error(ErrorKind::usage,
                fmt::format("allocator 'torch': expandable_segments over upstream={}: on a device "
                            "its pages are mapped through the CUDA virtual-memory API, as PyTorch "
                            "maps them, so they would not be {}'s memory; use upstream=cuda (or "
                            "sim)",
                            name, name));
  }
}

std::string alloc_conf(const Params& p) {
  std::vector<std::string> items;
  if (p.choice("backend") == "async") items.emplace_back("backend:cudaMallocAsync");
  if (p.flag("expandable_segments")) items.emplace_back("expandable_segments:True");
  if (p.bytes("max_split_size") != kUnlimited)
    items.push_back(fmt::format("max_split_size_mb:{}", p.bytes("max_split_size") / 1_MiB));
  if (p.bytes("max_non_split_rounding") != 20_MiB) {
    items.push_back(
        fmt::format("max_non_split_rounding_mb:{}", p.bytes("max_non_split_rounding") / 1_MiB));
  }
  if (p.real("garbage_collection_threshold") != 0.0) {
    items.push_back(
        fmt::format("garbage_collection_threshold:{:g}", p.real("garbage_collection_threshold")));
  }
  if (p.integer("roundup_power2_divisions") != 0) {
    items.push_back(
        fmt::format("roundup_power2_divisions:{}", p.integer("roundup_power2_divisions")));
  }
  return fmt::format("{}", fmt::join(items, ","));
}

std::optional<FrontierRange> frontier_range(const Params& options, std::uint64_t model_bytes) {
  if (options.choice("backend") != "async") return std::nullopt;
  const auto scaled = [&](double by) {
    return static_cast<std::uint64_t>(static_cast<double>(model_bytes) * by);
  };
  return FrontierRange{.low_bytes = scaled(1.0 / (1.0 + kAsyncModelAbove)),
                       .high_bytes = scaled(1.0 / (1.0 - kAsyncModelBelow))};
}

namespace {

// A recorded option as the default of an option the user left alone, where it has the option's
// type (a per-size table is not one: the caller reads it).
void take(Params& effective, std::vector<std::string>& taken, const RecordedSettings& recorded,
          const char* name) {
  const auto it = recorded.options.find(name);
  if (it == recorded.options.end() || effective.was_set(name) ||
      it->second.index() != effective.values().at(name).index()) {
    return;
  }
  effective.set(name, it->second);
  taken.push_back(fmt::format("{}={}", name, format_param_value(effective.values().at(name))));
}

// roundup_power2_divisions recorded per size (PyTorch's intervals from 1 MB up, a whole number
// each, kPerSizeDivisions): the table, when it is one.
std::optional<std::array<std::uint32_t, 16>> per_size_divisions(const RecordedSettings& r) {
  const auto list = r.get<ChoiceList>("roundup_power2_divisions");
  if (!list || list->size() != 16) return std::nullopt;
  std::array<std::uint32_t, 16> table{};
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::string& text = (*list)[i];
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), table[i]);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  }
  return table;
}

TorchConfig config_from(const Params& p) {
  TorchConfig c;
  c.backend = p.choice("backend") == "async" ? Backend::async : Backend::native;
  c.expandable_segments = p.flag("expandable_segments");
  c.max_split_size = p.bytes("max_split_size");
  c.max_non_split_rounding = p.bytes("max_non_split_rounding");
  c.large_segment_size = p.bytes("large_segment_size");
  c.roundup_power2_divisions.fill(
      static_cast<std::uint32_t>(p.integer("roundup_power2_divisions")));
  c.garbage_collection_threshold = p.real("garbage_collection_threshold");
  c.budget_by = p.choice("budget_by") == "fraction" ? BudgetBy::fraction : BudgetBy::device;
  return c;
}

}  // namespace

ResolvedTorch resolve_torch(const Params& options, const RecordedSettings* recorded) {
  ResolvedTorch out{.effective = options};
  if (recorded == nullptr) {
    out.config = config_from(out.effective);
    return out;
  }
  const RecordedSettings& r = *recorded;
  Params& e = out.effective;
  std::vector<std::string> taken;
  for (const char* name :
       {"expandable_segments", "max_split_size", "max_non_split_rounding", "large_segment_size",
        "garbage_collection_threshold", "backend", "roundup_power2_divisions"}) {
    take(e, taken, r, name);
  }
  out.config = config_from(e);
  if (const auto table = per_size_divisions(r); table && !e.was_set("roundup_power2_divisions")) {
    out.config.roundup_power2_divisions = *table;
    std::vector<std::string> steps;
    for (std::size_t i = 0; i < table->size(); ++i)
      steps.push_back(fmt::format("{}MB:{}", 1ULL << i, (*table)[i]));
    taken.push_back(fmt::format("roundup_power2_divisions=[{}]", fmt::join(steps, ",")));
  }
  if (!taken.empty()) {
    out.notes.push_back(fmt::format(
        "torch: the snapshot's allocator_settings are the defaults ({}); options given with "
        "--allocator win",
        fmt::join(taken, ", ")));
  }
  // A card answers "how much memory": the fraction the program ran under is a question of its
  // own, asked for by name.
  if (ran_under_fraction_cap(r) && !e.was_set("budget_by")) {
    out.notes.emplace_back(
        "torch: the program ran under torch.cuda.set_per_process_memory_fraction (its OOM left "
        "the device room for the request); this run models a card of the budget's size "
        "(budget_by=device): to replay it under a fraction cap as it ran, "
        "-a torch:budget_by=fraction");
  }
  return out;
}

}  // namespace oomlab::torch
