// The model of PyTorch's CUDA caching allocator, rule by rule, over the sim. Where a rule was
// measured on the GPU with PyTorch 2.11 (tests/data/pytorch/rules.jsonl), the test replays that
// experiment and expects what PyTorch did.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "allocators/sim_allocator.hpp"
#include "pytorch/model/allocator_device_memory.hpp"
#include "pytorch/model/torch_allocator.hpp"

namespace oomlab::torch {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;

struct Model {
  explicit Model(std::uint64_t budget, TorchConfig config = {})
      : allocator(
            config,
            std::make_unique<AllocatorDeviceMemory>(
                std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = budget}),
                Stream{}, 80_GiB),
            budget, true) {}

  void* alloc(std::uint64_t bytes, std::uintptr_t stream = 0) {
    const AllocResult r = allocator.allocate(bytes, Stream{reinterpret_cast<void*>(stream)});
    return r.ok() ? r.ptr : nullptr;
  }
  void free(void* p) { allocator.deallocate(p, 0, {}); }
  [[nodiscard]] std::vector<std::pair<DeviceCallKind, std::uint64_t>> calls() const {
    std::vector<std::pair<DeviceCallKind, std::uint64_t>> out;
    for (const DeviceCall& c : allocator.device_calls())
      out.emplace_back(c.kind, c.bytes);
    return out;
  }
  [[nodiscard]] CacheStats stats() const { return allocator.model().stats(); }

  TorchAllocator allocator;
};

constexpr auto kAlloc = DeviceCallKind::segment_alloc;
constexpr auto kFree = DeviceCallKind::segment_free;
constexpr auto kMap = DeviceCallKind::segment_map;
constexpr auto kUnmap = DeviceCallKind::segment_unmap;
using Calls = std::vector<std::pair<DeviceCallKind, std::uint64_t>>;

TEST(TorchRounding, RequestsRoundTo512AndPowerOfTwoDivisions) {
  TorchConfig config;
  EXPECT_EQ(round_size(1, config), 512U);
  EXPECT_EQ(round_size(512, config), 512U);
  EXPECT_EQ(round_size(513, config), 1024U);
  EXPECT_EQ(round_size(3_MiB + 1, config), 3_MiB + 512);
  config.roundup_power2_divisions.fill(4);
  EXPECT_EQ(round_size(3_MiB + 1, config), 3_MiB + 512_KiB);  // steps of 512 KiB in [2, 4) MiB
  EXPECT_EQ(round_size(4_MiB, config), 4_MiB);                // a power of two stays
  EXPECT_EQ(round_size(1200, config), 1536U);  // under 512 x divisions: plain 512-byte rounding
  config.roundup_power2_divisions[roundup_interval(5_MiB)] = 2;
  EXPECT_EQ(round_size(5_MiB, config), 6_MiB);
  EXPECT_EQ(roundup_interval(1_MiB), 0U);
  EXPECT_EQ(roundup_interval(3_MiB), 1U);
  EXPECT_EQ(roundup_interval(64_GiB), kRoundupIntervals - 1);
}

TEST(TorchRounding, SegmentSizesFollowTheSizeClass) {
  const TorchConfig config;
  EXPECT_EQ(allocation_size(512, config), 2_MiB);
  EXPECT_EQ(allocation_size(1_MiB, config), 2_MiB);
  EXPECT_EQ(allocation_size(1_MiB + 512, config), 20_MiB);
  EXPECT_EQ(allocation_size(10_MiB - 512, config), 20_MiB);
  EXPECT_EQ(allocation_size(10_MiB, config), 10_MiB);
  EXPECT_EQ(allocation_size(10_MiB + 512, config), 12_MiB);
}

TEST(TorchModel, SmallRequestsShareTwoMiBSegments) {
  Model m(1_GiB);
  for (int i = 0; i < 4; ++i)
    ASSERT_NE(m.alloc(512_KiB), nullptr);
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 2_MiB}}));
  ASSERT_NE(m.alloc(1), nullptr);  // the fifth needs a second segment
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 2_MiB}, {kAlloc, 2_MiB}}));
  EXPECT_EQ(m.stats().allocated_bytes, 2_MiB + 512);
}

TEST(TorchModel, MidSizedRequestsSplitTwentyMiBSegments) {
  Model m(1_GiB);
  for (int i = 0; i < 5; ++i)
    ASSERT_NE(m.alloc(4_MiB), nullptr);
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 20_MiB}}));
  ASSERT_NE(m.alloc(4_MiB), nullptr);
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 20_MiB}, {kAlloc, 20_MiB}}));
}

TEST(TorchModel, LargePoolKeepsARemainderOfOneMiBOrLessInTheBlock) {
  Model m(1_GiB);
  ASSERT_NE(m.alloc(19_MiB + 512_KiB), nullptr);
  EXPECT_EQ(m.stats().allocated_bytes, 20_MiB);  // 512 KiB left over is not split off
  Model n(1_GiB);
  ASSERT_NE(n.alloc(18_MiB), nullptr);
  EXPECT_EQ(n.stats().allocated_bytes, 18_MiB);  // 2 MiB left over is
}

TEST(TorchModel, BestFitTakesTheSmallestCachedBlockThatFits) {
  Model m(1_GiB);
  void* a = m.alloc(8_MiB);   // segment 1: [a 8][b 12]
  void* b = m.alloc(12_MiB);  // segment 1, the rest
  void* c = m.alloc(6_MiB);   // segment 2: [c 6][14 free]
  ASSERT_TRUE(a && b && c);
  m.free(a);                     // 8 MiB free in segment 1; 14 MiB free in segment 2
  EXPECT_EQ(m.alloc(5_MiB), a);  // the 8 MiB block, not the 14
  EXPECT_EQ(m.calls().size(), 2U);
}

TEST(TorchModel, PoolsArePerStream) {
  Model m(1_GiB);
  void* a = m.alloc(4_MiB, 1);
  m.free(a);
  ASSERT_NE(m.alloc(4_MiB, 2), nullptr);  // stream 1's cached block is not for stream 2
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 20_MiB}, {kAlloc, 20_MiB}}));
}

TEST(TorchModel, FreedBlocksMergeAndEmptyCacheReturnsWholeSegments) {
  Model m(1_GiB);
  void* a = m.alloc(4_MiB);
  void* b = m.alloc(4_MiB);
  m.free(a);
  m.allocator.trim();  // b still lives in the segment: nothing goes back
  EXPECT_EQ(m.calls().size(), 1U);
  m.free(b);
  m.allocator.trim();
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 20_MiB}, {kFree, 20_MiB}}));
  EXPECT_EQ(m.stats().reserved_bytes, 0U);
}

TEST(TorchModel, ADeviceRefusalFreesTheCacheAndRetries) {
  Model m(40_MiB);
  m.free(m.alloc(16_MiB));  // cached: 16 MiB
  ASSERT_NE(m.alloc(30_MiB), nullptr);
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 16_MiB}, {kFree, 16_MiB}, {kAlloc, 30_MiB}}));
  EXPECT_EQ(m.stats().alloc_retries, 1U);
}

TEST(TorchModel, OutOfMemoryReportsWhatItAskedTheDeviceFor) {
  Model m(40_MiB);
  ASSERT_NE(m.alloc(30_MiB), nullptr);
  EXPECT_EQ(m.alloc(2_MiB), nullptr);  // a 20 MiB segment no longer fits
  const CacheStats s = m.stats();
  EXPECT_EQ(s.ooms, 1U);
  EXPECT_EQ(s.failed_device_bytes, 20_MiB);
  EXPECT_EQ(s.reserved_bytes, 30_MiB);
  EXPECT_EQ(m.allocator.probe(2_MiB, {}), AllocStatus::out_of_memory);
  EXPECT_EQ(m.allocator.probe(10_MiB, {}), AllocStatus::ok);  // a 10 MiB segment fits
  EXPECT_EQ(m.calls().size(), 1U);                            // probes change nothing
}

TEST(TorchModel, OversizeBlocksAreNeitherSplitNorUsedForSmallRequests) {
  TorchConfig config;
  config.max_split_size = 20_MiB;
  Model m(1_GiB, config);
  void* big = m.alloc(40_MiB);
  m.free(big);
  ASSERT_NE(m.alloc(12_MiB), nullptr);  // not from the cached 40 MiB block
  EXPECT_EQ(m.calls().size(), 2U);
  EXPECT_EQ(m.alloc(30_MiB), big);  // 40 < 30 + 20: close enough, taken whole
  EXPECT_EQ(m.stats().allocated_bytes, 12_MiB + 40_MiB);
  m.free(big);
  ASSERT_NE(m.alloc(20_MiB), nullptr);  // 40 >= 20 + 20: too wasteful, a new segment
  EXPECT_EQ(m.calls().back(), std::make_pair(kAlloc, 20_MiB));
}

TEST(TorchModel, MaxSplitSizeReleasesOversizeBlocksFirst) {
  TorchConfig config;
  config.max_split_size = 20_MiB;
  Model m(120_MiB, config);
  ASSERT_NE(m.alloc(9_MiB), nullptr);  // a 20 MiB segment, split (11 MiB left)
  m.free(m.alloc(12_MiB));             // a whole 12 MiB segment, cached
  m.free(m.alloc(80_MiB));             // a whole oversize segment, cached
  // 112 + 50 > 120: the oversize block goes, and it is enough; the 12 MiB segment stays.
  ASSERT_NE(m.alloc(50_MiB), nullptr);
  EXPECT_EQ(m.calls(), (Calls{{kAlloc, 20_MiB},
                              {kAlloc, 12_MiB},
                              {kAlloc, 80_MiB},
                              {kFree, 80_MiB},
                              {kAlloc, 50_MiB}}));
  EXPECT_EQ(m.stats().alloc_retries, 0U);
}

TEST(TorchModel, GarbageCollectionActsOnlyUnderAFraction) {
  for (const BudgetBy by : {BudgetBy::device, BudgetBy::fraction}) {
    TorchConfig config;
    config.garbage_collection_threshold = 0.5;
    config.budget_by = by;
    Model m(100_MiB, config);
    void* a = m.alloc(30_MiB);
    void* b = m.alloc(24_MiB);
    m.free(a);
    m.free(b);                            // 54 MiB cached in two whole segments, over half the cap
    ASSERT_NE(m.alloc(40_MiB), nullptr);  // fits beside them: 54 + 40 <= 100
    const bool collected = m.calls().size() > 3;
    EXPECT_EQ(collected, by == BudgetBy::fraction);
  }
}

// tests/data/pytorch/rules.jsonl, "expandable_sizes": PyTorch 2.11 with expandable segments.
TEST(TorchExpandable, MapsWhatPyTorchMappedOnTheGpu) {
  TorchConfig config;
  config.expandable_segments = true;
  Model m(1_GiB, config);
  std::vector<void*> held;
  for (const std::uint64_t bytes : {4_KiB, 3_MiB, 12_MiB, 25_MiB, 100_MiB})
    held.push_back(m.alloc(bytes));
  m.free(held[2]);
  held.erase(held.begin() + 2);
  held.push_back(m.alloc(11_MiB));
  held.push_back(m.alloc(1536_KiB));
  for (void* p : held)
    m.free(p);
  m.allocator.trim();
  EXPECT_EQ(m.calls(), (Calls{{kMap, 2_MiB},
                              {kMap, 20_MiB},
                              {kMap, 20_MiB},
                              {kMap, 100_MiB},
                              {kMap, 20_MiB},
                              {kUnmap, 160_MiB},
                              {kUnmap, 2_MiB}}));
  EXPECT_EQ(m.stats().reserved_bytes, 0U);
}

// rules.jsonl, "fraction_expandable_30MiB": under a fraction PyTorch checks the whole segment
// size of a request before mapping, even where fewer pages would do.
TEST(TorchExpandable, AFractionChecksTheSegmentSizeNotThePagesNeeded) {
  TorchConfig config;
  config.expandable_segments = true;
  config.budget_by = BudgetBy::fraction;
  Model m(64_MiB, config);
  ASSERT_NE(m.alloc(30_MiB), nullptr);
  EXPECT_EQ(m.alloc(30_MiB), nullptr);  // 40 mapped + 30 > 64, though 20 more would have fitted
  EXPECT_EQ(m.calls(), (Calls{{kMap, 40_MiB}}));
  EXPECT_EQ(m.stats().failed_device_bytes, 30_MiB);
}

// rules.jsonl, "fraction_native_2MiB" and "fraction_expandable_2MiB": 30 requests of 2 MiB fit
// under a 64 MiB cap, in three 20 MiB segments (or pages); the 31st asks for 20 MiB and fails.
TEST(TorchModel, TwoMiBRequestsUnderA64MiBFraction) {
  for (const bool expandable : {false, true}) {
    TorchConfig config;
    config.expandable_segments = expandable;
    config.budget_by = BudgetBy::fraction;
    Model m(64_MiB, config);
    int fitted = 0;
    while (fitted < 100 && m.alloc(2_MiB) != nullptr)
      ++fitted;
    EXPECT_EQ(fitted, 30) << "expandable " << expandable;
    EXPECT_EQ(m.stats().reserved_bytes, 60_MiB);
    EXPECT_EQ(m.stats().failed_device_bytes, 20_MiB);
  }
}

TEST(TorchModel, PlacedSegmentsHoldTheirLiveBlocksAndCacheTheGaps) {
  Model m(1_GiB);
  const PlacedSegment segment{
      .bytes = 20_MiB,
      .blocks = {{.offset = 2_MiB, .bytes = 4_MiB}, {.offset = 10_MiB, .bytes = 3_MiB}}};
  const std::vector<AllocResult> placed = allocate_placed(m.allocator, {&segment, 1});
  ASSERT_EQ(placed.size(), 2U);
  ASSERT_TRUE(placed[0].ok() && placed[1].ok());
  EXPECT_EQ(static_cast<char*>(placed[1].ptr) - static_cast<char*>(placed[0].ptr), 8_MiB);
  EXPECT_TRUE(m.calls().empty());  // what was there before the run is no call of the run's
  EXPECT_EQ(m.stats().reserved_bytes, 20_MiB);
  void* gap = m.alloc(2_MiB);  // best fit: the 2 MiB gap at the segment's start
  EXPECT_EQ(static_cast<char*>(placed[0].ptr) - static_cast<char*>(gap), 2_MiB);
  EXPECT_TRUE(m.calls().empty());
}

// rules.jsonl, "async_growth": the cudaMallocAsync backend's pool grows in 32 MiB chunks.
TEST(TorchAsync, ThePoolGrowsInChunksOf32MiB) {
  TorchConfig config;
  config.backend = Backend::async;
  for (const auto& [bytes, reserved] :
       std::vector<std::pair<std::uint64_t, std::uint64_t>>{{256, 32_MiB},
                                                            {31_MiB, 32_MiB},
                                                            {33_MiB, 64_MiB},
                                                            {65_MiB, 96_MiB},
                                                            {100_MiB, 128_MiB},
                                                            {200_MiB, 224_MiB}}) {
    Model m(1_GiB, config);
    ASSERT_NE(m.alloc(bytes), nullptr);
    EXPECT_EQ(m.stats().reserved_bytes, reserved) << bytes;
  }
  Model m(1_GiB, config);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i)
    blocks.push_back(m.alloc(1_MiB));
  EXPECT_EQ(m.stats().reserved_bytes, 64_MiB);
  for (std::size_t i = 0; i < blocks.size(); i += 2)
    m.free(blocks[i]);
  ASSERT_NE(m.alloc(20_MiB), nullptr);  // the holes are 1 MiB each: a new chunk
  EXPECT_EQ(m.stats().reserved_bytes, 96_MiB);
}

// rules.jsonl, "async_full_1MiB" / "async_full_32MiB": on a full device the pool gives back only
// chunks in which nothing lives.
TEST(TorchAsync, AFullDeviceGetsBackOnlyChunksWithNothingLive) {
  TorchConfig config;
  config.backend = Backend::async;
  for (const std::uint64_t block : {1_MiB, 32_MiB}) {
    Model m(512_MiB, config);
    std::vector<void*> blocks;
    while (void* p = m.alloc(block))
      blocks.push_back(p);
    for (std::size_t i = 0; i < blocks.size(); i += 2)
      m.free(blocks[i]);
    EXPECT_EQ(m.alloc(64_MiB) != nullptr, block == 32_MiB) << block;
  }
}

}  // namespace
}  // namespace oomlab::torch
