// fragmentation: "CUDA out of memory. Tried to allocate 2.00 MiB" with gigabytes free.
// A program fills memory with small blocks (a cache of small tensors, the per-sample buffers of
// a data loader, the many little allocations of an optimizer step), frees most of them, and
// keeps a few alive scattered across memory. Then it asks for one large block: a new weight
// buffer, a bigger batch. Every 2 MiB page the driver hands out still holds one live block, so
// no page can be given back or remapped, and the large request fails with most memory free.
// Measured on an H100 with cudaMalloc: 64 KiB blocks, 1 in 32 kept, 3% of memory live, and a
// 2 MiB request failed (docs/allocators.md, "Measured on an H100").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {

class Fragmentation final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "fragmentation"; }
  [[nodiscard]] std::string_view summary() const override {
    return "fill memory with small blocks, keep a scattered few, then ask for ever larger blocks";
  }
  [[nodiscard]] std::string_view details() const override {
    return "Fills the budget with small blocks until the allocator refuses (phase 'fill'), frees "
           "all but a scattered fraction of them ('free'), then requests probe, 2x probe, 4x "
           "probe... until one fails ('grow'). With the defaults on cudaMalloc or sim, about 3% "
           "of the budget stays live and yet a 2 MiB request fails: cause 'fragmentation'. "
           "Metrics: live_fraction, free_bytes (budget - live), largest_free_bytes after the "
           "frees, and the largest request that succeeded.";
  }

  [[nodiscard]] ParamSpec params() const override {
    using namespace oomlab::literals;
    return {
        {.name = "block",
         .type = ParamType::bytes,
         .default_value = Bytes{64_KiB},
         .help = "size of every fill block (unless min/max are given)"},
        {.name = "min",
         .type = ParamType::bytes,
         .default_value = Bytes{0},
         .help = "random fill sizes: smallest (with max)"},
        {.name = "max",
         .type = ParamType::bytes,
         .default_value = Bytes{0},
         .help = "random fill sizes: largest; sizes are uniform in [min, max]"},
        {.name = "keep",
         .type = ParamType::fraction,
         .default_value = Fraction{1, 32},
         .help = "fraction of fill blocks that stay live"},
        {.name = "pattern",
         .type = ParamType::choice,
         .default_value = std::string("interleaved"),
         .help = "which blocks stay: the first of every group (interleaved) or at random",
         .choices = {"interleaved", "random"}},
        {.name = "probe",
         .type = ParamType::bytes,
         .default_value = Bytes{2_MiB},
         .help = "the first large request; each next one is twice as large"},
        {.name = "touch",
         .type = ParamType::flag,
         .default_value = true,
         .help = "write every page of each block, so managed memory lands on the device"},
    };
  }

  void validate(const Params& p) const override {
    const bool random_sizes = p.bytes("max") != 0 || p.bytes("min") != 0;
    if (random_sizes && (p.bytes("min") == 0 || p.bytes("max") < p.bytes("min"))) {
      throw_usage(fmt::format("fragmentation: random sizes need 0 < min <= max (min={}, max={})",
                              format_bytes(p.bytes("min")), format_bytes(p.bytes("max"))));
    }
    if (!random_sizes && p.bytes("block") == 0) throw_usage("fragmentation: block must be > 0");
    if (p.bytes("probe") == 0) throw_usage("fragmentation: probe must be > 0");
  }

  // The fill keeps every block in host memory (~80 bytes each with the harness's bookkeeping).
  static constexpr std::uint64_t kMaxFillBlocks = 32ULL << 20U;
  static constexpr std::uint64_t kFillReserve = 1ULL << 20U;  // 32 MiB of Blocks at most

  void run(RunContext& ctx) override {
    const Params& p = ctx.params();
    const std::uint64_t smallest = p.bytes("max") != 0 ? p.bytes("min") : p.bytes("block");
    if (ctx.budget_bytes() / smallest > kMaxFillBlocks) {
      throw_usage(fmt::format(
          "fragmentation: filling {} with blocks of {} takes up to {} blocks, more than the {} "
          "this scenario keeps track of: use larger blocks or a smaller budget",
          format_bytes(ctx.budget_bytes()), format_bytes(smallest),
          format_count(ctx.budget_bytes() / smallest), format_count(kMaxFillBlocks)));
    }
    std::vector<Block> blocks = fill_memory(ctx, p);
    free_all_but_kept(ctx, p, blocks);

    const std::uint64_t live = ctx.live_bytes();
    const std::uint64_t budget = ctx.budget_bytes();
    ctx.metric("live_fraction", static_cast<double>(live) / static_cast<double>(budget));
    ctx.metric("free_bytes", static_cast<double>(budget > live ? budget - live : 0));
    if (const auto largest = ctx.largest_free_bytes()) {
      ctx.metric("largest_free_bytes", static_cast<double>(*largest));
    }
    grow_until_oom(ctx, p.bytes("probe"));
  }

 private:
  // Phase 1: small blocks until the allocator says no. That refusal is expected (the budget is
  // full), so it is not the run's OOM.
  static std::vector<Block> fill_memory(RunContext& ctx, const Params& p) {
    ctx.phase("fill");
    const bool random_sizes = p.bytes("max") != 0;
    const bool touch = p.flag("touch");
    std::vector<Block> blocks;
    // Reserved up front: grown by doubling, the list was copied and its fresh pages faulted in
    // during the timed fill (~1 µs a page on a VM). Capped, so that a huge budget reserves little.
    const std::uint64_t smallest = random_sizes ? p.bytes("min") : p.bytes("block");
    blocks.reserve(std::min<std::uint64_t>(ctx.budget_bytes() / smallest, kFillReserve));
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const std::uint64_t size =
          random_sizes ? ctx.rng().uniform(p.bytes("min"), p.bytes("max")) : p.bytes("block");
      Block block = ctx.try_allocate(size, "fill");
      if (!block) break;
      if (touch) ctx.touch(block);
      blocks.push_back(block);
    }
    ctx.metric("fill_ms",
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count());
    ctx.metric("fill_blocks", static_cast<double>(blocks.size()));
    ctx.metric("fill_bytes", static_cast<double>(ctx.live_bytes()));
    return blocks;
  }

  // Phase 2: free all but `keep` of them, so the survivors sit scattered through memory.
  static void free_all_but_kept(RunContext& ctx, const Params& p, std::vector<Block>& blocks) {
    ctx.phase("free");
    const Fraction keep = p.fraction("keep");
    const bool random = p.choice("pattern") == "random";
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const bool kept =
          random ? ctx.rng().chance(keep.value()) : i % keep.denominator < keep.numerator;
      if (!kept) ctx.release(blocks[i]);
    }
    ctx.metric("kept_blocks",
               static_cast<double>(std::count_if(blocks.begin(), blocks.end(),
                                                 [](const Block& b) { return b.ok(); })));
  }

  // Phase 3: one large request after another, each twice the last, each freed once it fits,
  // until one fails. This is the run's OOM.
  static void grow_until_oom(RunContext& ctx, std::uint64_t first_request) {
    ctx.phase("grow");
    std::uint64_t largest_ok = 0;
    for (std::uint64_t request = first_request, step = 0;; request *= 2, ++step) {
      ctx.step(step);
      Block block = ctx.allocate(request, "large request");
      if (!block) break;
      ctx.touch(block);
      largest_ok = request;
      ctx.release(block);
      if (request > UINT64_MAX / 2) break;  // cannot double again; the budget ended long before
    }
    ctx.metric("largest_request_ok_bytes", static_cast<double>(largest_ok));
  }
};

OOMLAB_REGISTER_SCENARIO(Fragmentation)

}  // namespace oomlab
