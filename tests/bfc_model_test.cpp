// The model of XLA's BFC pool, rule by rule as its source states them (bfc_model.hpp): bins,
// best fit, the split rule, coalescing within a region only, growth by doubling regions, the
// back-off at 0.9 in single precision, preallocation, and spatial partitioning's holes before
// the untouched rest of the pool. Regions come from a stand-in source with gaps between them.
#include "jax/model/bfc_model.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "allocators/backends.hpp"
#include "jax/model/xla_backend.hpp"
#include "oomlab/backend.hpp"
#include "oomlab/error.hpp"
#include "oomlab/params.hpp"
#include "oomlab/units.hpp"

namespace {

using namespace oomlab::literals;
using oomlab::jax::BfcConfig;
using oomlab::jax::BfcModel;

// Regions 1 GiB apart (never adjacent), each refused when over `largest`.
struct Source {
  std::uint64_t next = 1_GiB;
  std::uint64_t largest = UINT64_MAX;
  std::vector<std::uint64_t> asked;
  std::vector<std::uint64_t> given;
  oomlab::jax::RegionSource make() {
    return {.take = [this](std::uint64_t bytes) -> std::optional<std::uint64_t> {
              asked.push_back(bytes);
              if (bytes > largest) return std::nullopt;
              given.push_back(bytes);
              const std::uint64_t at = next;
              next += 1_GiB + bytes;
              return at;
            },
            .give_back = [](std::uint64_t, std::uint64_t) {}};
  }
};

BfcConfig classic(std::uint64_t limit) {
  return {.limit_bytes = limit, .allow_growth = false, .spatial = false};
}

TEST(BfcModel, BinsDoubleFrom256BytesToA256MiBBinForEverythingLarger) {
  using oomlab::jax::bin_for;
  EXPECT_EQ(bin_for(1), 0U);
  EXPECT_EQ(bin_for(511), 0U);
  EXPECT_EQ(bin_for(512), 1U);
  EXPECT_EQ(bin_for(2_MiB), 13U);
  EXPECT_EQ(bin_for(256_MiB - 1), 19U);
  EXPECT_EQ(bin_for(256_MiB), 20U);
  EXPECT_EQ(bin_for(40_GiB), 20U);
  EXPECT_EQ(oomlab::jax::rounded_bytes(1), 256U);
  EXPECT_EQ(oomlab::jax::rounded_bytes(257), 512U);
}

TEST(BfcModel, TheSmallestFreeChunkThatHoldsTheRequestWins) {
  Source source;
  BfcModel pool(classic(64_MiB), source.make());
  const auto a = pool.allocate(4_MiB);
  const auto gap1 = pool.allocate(2_MiB);
  const auto b = pool.allocate(1_MiB);
  const auto gap2 = pool.allocate(1_MiB);
  const auto c = pool.allocate(1_MiB);
  ASSERT_TRUE(a && gap1 && b && gap2 && c);
  pool.free(*gap1);                       // a 2 MiB hole at the lower address
  pool.free(*gap2);                       // a 1 MiB hole above it
  EXPECT_EQ(pool.allocate(1_MiB), gap2);  // best fit, not first fit
  EXPECT_EQ(pool.allocate(1_MiB), gap1);  // the 2 MiB hole, split: 1 MiB stays free
  EXPECT_EQ(pool.allocate(1_MiB), *gap1 + 1_MiB);
}

TEST(BfcModel, AChunkIsSplitOnlyWhenTwiceTheRequestOr128MiBLarger) {
  Source source;
  BfcModel pool(classic(1_GiB), source.make());
  const auto hole = pool.allocate(3_MiB);
  const auto keep = pool.allocate(1_MiB);
  ASSERT_TRUE(hole && keep);
  pool.free(*hole);
  const std::uint64_t before = pool.stats().in_use_bytes;
  ASSERT_EQ(pool.allocate(2_MiB), hole);                 // 3 MiB < 2 x 2 MiB: not split
  EXPECT_EQ(pool.stats().in_use_bytes - before, 3_MiB);  // the whole chunk counts
  pool.free(*hole);
  ASSERT_EQ(pool.allocate(1_MiB + 512_KiB), hole);  // 3 MiB >= 2 x 1.5 MiB: split
  EXPECT_EQ(pool.stats().in_use_bytes - before, 1_MiB + 512_KiB);
  // Below twice the request, only 128 MiB or more over it splits.
  const auto big = pool.allocate(300_MiB);
  const auto guard = pool.allocate(2_MiB);  // right after it: the hole is bounded
  ASSERT_TRUE(big && guard);
  ASSERT_EQ(*guard, *big + 300_MiB);
  pool.free(*big);
  const std::uint64_t held = pool.stats().in_use_bytes;
  ASSERT_EQ(pool.allocate(173_MiB), big);  // 127 MiB over: handed out whole
  EXPECT_EQ(pool.stats().in_use_bytes - held, 300_MiB);
  pool.free(*big);
  ASSERT_EQ(pool.allocate(171_MiB), big);  // 129 MiB over: split
  EXPECT_EQ(pool.stats().in_use_bytes - held, 171_MiB);
  EXPECT_EQ(pool.allocate(129_MiB), *big + 171_MiB);
}

TEST(BfcModel, FreedChunksCoalesceWithinTheirRegionButRegionsNeverMerge) {
  Source source;
  BfcModel pool({.limit_bytes = 64_MiB, .allow_growth = true, .spatial = false}, source.make());
  const auto a = pool.allocate(2_MiB);  // fills the first region (2 MiB)
  const auto b = pool.allocate(2_MiB);  // a second region of 4 MiB
  const auto c = pool.allocate(2_MiB);  // its other half
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(source.given, (std::vector<std::uint64_t>{2_MiB, 4_MiB}));
  pool.free(*b);
  pool.free(*c);
  pool.free(*a);
  const oomlab::jax::BfcStats stats = pool.stats();
  EXPECT_EQ(stats.free_bytes, 6_MiB);
  EXPECT_EQ(stats.largest_free_bytes, 4_MiB);  // b and c merged, a apart
  EXPECT_EQ(stats.in_use_bytes, 0U);
}

TEST(BfcModel, GrowthDoublesEachRegionOrDoublesUntilALargeRequestFits) {
  Source source;
  BfcModel pool({.limit_bytes = 1_GiB, .allow_growth = true, .spatial = false}, source.make());
  ASSERT_TRUE(pool.allocate(1_KiB));   // 2 MiB region, next 4 MiB
  ASSERT_TRUE(pool.allocate(3_MiB));   // 4 MiB region, next 8 MiB
  ASSERT_TRUE(pool.allocate(20_MiB));  // 8 -> 16 -> 32 MiB, not doubled again
  ASSERT_TRUE(pool.allocate(30_MiB));  // a 32 MiB region again, next 64 MiB
  ASSERT_TRUE(pool.allocate(60_MiB));
  EXPECT_EQ(source.given, (std::vector<std::uint64_t>{2_MiB, 4_MiB, 32_MiB, 32_MiB, 64_MiB}));
  EXPECT_EQ(pool.stats().pool_bytes, 134_MiB);
}

TEST(BfcModel, ARefusedRegionIsAskedAgainAtNineTenthsInSinglePrecision) {
  Source source;
  source.largest = 50_MiB;
  BfcModel pool(classic(64_MiB), source.make());  // preallocation: asks for all 64 MiB
  ASSERT_TRUE(pool.allocate(1_MiB));
  ASSERT_GE(source.asked.size(), 3U);
  std::uint64_t expect = 64_MiB;
  for (std::size_t i = 1; i < source.asked.size(); ++i) {
    expect =
        oomlab::jax::rounded_bytes(static_cast<std::uint64_t>(static_cast<float>(expect) * 0.9F));
    EXPECT_EQ(source.asked[i], expect);
  }
  EXPECT_LE(source.given.front(), 50_MiB);
  // Nothing under the request is asked for: a 49 MiB request on a source of 10 MiB fails.
  Source small;
  small.largest = 10_MiB;
  BfcModel tight(classic(64_MiB), small.make());
  EXPECT_FALSE(tight.allocate(49_MiB));
  EXPECT_GE(small.asked.back(), 49_MiB);
}

TEST(BfcModel, ASourceWithNothingLeftRefusesEvenTheSmallestRegion) {
  // Nine tenths of 2304 B round back up to 2304 B (in 256 B): asked again, the same region would
  // be refused again without end.
  Source empty;
  empty.largest = 0;
  BfcModel grown({.limit_bytes = 64_MiB, .allow_growth = true, .spatial = false}, empty.make());
  EXPECT_FALSE(grown.allocate(256));
  EXPECT_FALSE(grown.allocate(1));
  // From a 2 MiB region down by nine tenths to 2304 B is 71 asks: each refusal asks them all,
  // the last 2304 B, then stops.
  EXPECT_EQ(empty.asked.size(), 2U * 71U);
  EXPECT_EQ(empty.asked.back(), 2304U);
  Source none;
  none.largest = 0;
  BfcModel whole(classic(512), none.make());
  EXPECT_FALSE(whole.allocate(256));
  EXPECT_EQ(none.asked, (std::vector<std::uint64_t>{512})) << "nine tenths of 512 B round to 512";
}

TEST(BfcModel, PreallocationTakesTheWholeLimitAtTheFirstRequestAndNoMore) {
  Source source;
  BfcModel pool({.limit_bytes = 18_GiB, .allow_growth = false, .spatial = true}, source.make());
  EXPECT_EQ(pool.stats().pool_bytes, 0U);  // not when made
  ASSERT_TRUE(pool.allocate(4));
  EXPECT_EQ(source.given, (std::vector<std::uint64_t>{18_GiB}));
  EXPECT_TRUE(pool.allocate(17_GiB));
  EXPECT_FALSE(pool.allocate(2_GiB));  // past the limit: no second region
  EXPECT_EQ(source.given.size(), 1U);
}

TEST(BfcModel, SpatialPartitioningTakesAHoleBeforeTheRestOfThePool) {
  for (const bool spatial : {false, true}) {
    Source source;
    BfcModel pool({.limit_bytes = 1_GiB, .allow_growth = false, .spatial = spatial}, source.make());
    const auto a = pool.allocate(8_MiB);
    const auto b = pool.allocate(300_MiB);
    const auto c = pool.allocate(500_MiB);  // 216 MiB of the pool left above it
    ASSERT_TRUE(a && b && c);
    pool.free(*b);  // a 300 MiB hole
    const auto d = pool.allocate(6_MiB);
    ASSERT_TRUE(d);
    // Best fit alone takes the smaller rest at the top; spatial partitioning the hole first.
    EXPECT_EQ(*d, spatial ? *b : *c + 500_MiB) << "spatial=" << spatial;
  }
}

TEST(BfcModel, TheRestOfThePoolIsHandedOutWholeWhenTheSplitRuleSaysSo) {
  Source source;
  BfcModel pool({.limit_bytes = 128_MiB, .allow_growth = false, .spatial = true}, source.make());
  ASSERT_TRUE(pool.allocate(8_MiB));
  const std::uint64_t before = pool.stats().in_use_bytes;
  ASSERT_TRUE(pool.allocate(100_MiB));  // 120 MiB left: under twice 100, and 20 MiB over
  EXPECT_EQ(pool.stats().in_use_bytes - before, 120_MiB);
  EXPECT_FALSE(pool.allocate(1_MiB));
}

TEST(BfcModel, AChunkFreedBelowTheGapJoinsIt) {
  Source source;
  BfcModel pool({.limit_bytes = 64_MiB, .allow_growth = false, .spatial = true}, source.make());
  const auto a = pool.allocate(8_MiB);
  const auto b = pool.allocate(8_MiB);
  ASSERT_TRUE(a && b);
  pool.free(*b);
  EXPECT_EQ(pool.stats().largest_free_bytes, 56_MiB);  // b back in the gap
  const auto c = pool.allocate(16_MiB);
  EXPECT_EQ(c, b);  // cut from the gap's low end, where b was
  pool.free(*c);
  pool.free(*a);
  EXPECT_EQ(pool.stats().largest_free_bytes, 64_MiB);
  EXPECT_EQ(pool.allocate(64_MiB), a);
}

TEST(BfcModel, FreeMemoryInPiecesIsRefusedAsXlaRefusesIt) {
  Source source;
  BfcModel pool({.limit_bytes = 64_MiB, .allow_growth = false, .spatial = true}, source.make());
  std::vector<std::uint64_t> blocks;
  for (int i = 0; i < 8; ++i)
    blocks.push_back(*pool.allocate(8_MiB));
  for (std::size_t i = 0; i < blocks.size(); i += 2)
    pool.free(blocks[i]);  // 32 MiB free, in 8 MiB holes
  EXPECT_EQ(pool.stats().free_bytes, 32_MiB);
  EXPECT_FALSE(pool.allocate(9_MiB));
  EXPECT_TRUE(pool.allocate(8_MiB));
}

TEST(XlaBackend, ThePoolIsJaxsShareOfTheCardInSinglePrecisionRoundedTo2MiB) {
  const oomlab::BackendInfo* xla = oomlab::find_backend("xla");
  ASSERT_NE(xla, nullptr);
  oomlab::Params options(xla->options);
  EXPECT_EQ(oomlab::jax::pool_config(options, 24_GiB)->limit_bytes, 18_GiB);
  options.set("fraction", 0.9);
  // 0.9 as a float is 0.89999997615...: 24 GiB x that is just under 21.6 GiB, rounded up.
  const std::uint64_t share =
      static_cast<std::uint64_t>(static_cast<double>(24_GiB) * static_cast<double>(0.9F));
  EXPECT_EQ(oomlab::jax::pool_config(options, 24_GiB)->limit_bytes,
            (share + 2_MiB - 1) / 2_MiB * 2_MiB);
  options.set("preallocate", false);
  const auto grown = oomlab::jax::pool_config(options, 24_GiB);
  EXPECT_TRUE(grown->allow_growth);
  EXPECT_FALSE(grown->spatial);  // spatial partitioning comes with preallocation only
  options.set("allocator", std::string("platform"));
  EXPECT_FALSE(oomlab::jax::pool_config(options, 24_GiB).has_value());
}

// An 8 GiB card with 7 GiB held beside the pool: the pool's limit is still 6 GiB, its regions
// come from the 1 GiB left. A probe past what the pool holds free is the region the card gives.
TEST(XlaBackend, AProbeThatNeedsARegionAsksTheCardForIt) {
  const oomlab::BackendInfo* xla = oomlab::find_backend("xla");
  ASSERT_NE(xla, nullptr);
  oomlab::Params options(xla->options);
  options.set("preallocate", false);
  options.set("outside", oomlab::Bytes{7_GiB});
  const auto pool = oomlab::make_backend(xla->kind, options, {.budget_bytes = 8_GiB});
  const oomlab::Stream stream;
  const oomlab::AllocResult first = pool->allocate(100_MiB, stream);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(pool->probe(50_MiB, stream), oomlab::AllocStatus::ok);   // a free chunk holds it
  EXPECT_EQ(pool->probe(800_MiB, stream), oomlab::AllocStatus::ok);  // a region the card has
  // Under the pool's limit (6 GiB) but over what the card has left: refused, as growing it is.
  EXPECT_NE(pool->probe(2_GiB, stream), oomlab::AllocStatus::ok);
  EXPECT_FALSE(pool->allocate(2_GiB, stream).ok());
  pool->deallocate(first.ptr, 100_MiB, stream);
}

// A user's own run whose outside= takes the whole card is refused; a search's trial at a card that
// small (a frontier bisecting down past it) is a run whose pool gets nothing: every request
// refused.
TEST(XlaBackend, WhatLiesBesideThePoolMustLeaveItSomeOfTheCard) {
  const oomlab::BackendInfo* xla = oomlab::find_backend("xla");
  ASSERT_NE(xla, nullptr);
  ASSERT_NE(xla->validate_card, nullptr);
  oomlab::Params options(xla->options);
  options.set("outside", oomlab::Bytes{8_GiB});
  try {
    xla->validate_card(options, 8_GiB);
    FAIL() << "outside= the whole card was taken";
  } catch (const oomlab::Error& e) {
    EXPECT_EQ(e.kind(), oomlab::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("outside=8.00 GiB is no less than the card"),
              std::string::npos)
        << e.what();
  }
  const auto nothing = oomlab::make_backend(xla->kind, options, {.budget_bytes = 8_GiB});
  ASSERT_NE(nothing, nullptr);
  EXPECT_FALSE(nothing->allocate(1_MiB, oomlab::Stream{}).ok()) << "the pool had none of the card";
  options.set("outside", oomlab::Bytes{8_GiB - 2_MiB});
  xla->validate_card(options, 8_GiB);
  const auto room = oomlab::make_backend(xla->kind, options, {.budget_bytes = 8_GiB});
  const oomlab::AllocResult one = room->allocate(1_MiB, oomlab::Stream{});
  EXPECT_TRUE(one.ok()) << "2 MiB of the card left for the pool";
  room->deallocate(one.ptr, 1_MiB, oomlab::Stream{});
}

}  // namespace
