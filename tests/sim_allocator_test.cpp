// The sim's page model (docs/allocators.md): small blocks pack into 2 MiB pages, a page returns
// only when its last block is freed, large requests take whole pages from anywhere.
#include "allocators/sim_allocator.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace oomlab {
namespace {

using namespace oomlab::literals;

SimAllocator make_sim(std::uint64_t capacity) {
  return SimAllocator(SimAllocator::Options{.capacity_bytes = capacity});
}

std::vector<void*> fill(SimAllocator& sim, std::size_t bytes) {
  std::vector<void*> blocks;
  for (;;) {
    const AllocResult r = sim.allocate(bytes, {});
    if (!r.ok()) {
      EXPECT_EQ(r.status, AllocStatus::out_of_memory);
      return blocks;
    }
    blocks.push_back(r.ptr);
  }
}

TEST(SimAllocator, PacksSmallBlocksIntoOnePage) {
  SimAllocator sim = make_sim(64_MiB);
  for (int i = 0; i < 32; ++i)
    ASSERT_TRUE(sim.allocate(64_KiB, {}).ok());
  EXPECT_EQ(sim.reserved_bytes(), 2_MiB);
  EXPECT_EQ(sim.pages_holding_small_blocks(), 1U);
  ASSERT_TRUE(sim.allocate(64_KiB, {}).ok());  // the 33rd needs a second page
  EXPECT_EQ(sim.reserved_bytes(), 4_MiB);
}

TEST(SimAllocator, ReleasesAPageOnlyWhenItsLastBlockIsFreed) {
  SimAllocator sim = make_sim(64_MiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i)
    blocks.push_back(sim.allocate(64_KiB, {}).ptr);
  for (int i = 0; i < 31; ++i)
    sim.deallocate(blocks[i], 64_KiB, {});
  EXPECT_EQ(sim.reserved_bytes(), 2_MiB) << "one live block pins the page";
  sim.deallocate(blocks[31], 64_KiB, {});
  EXPECT_EQ(sim.reserved_bytes(), 0U);
  EXPECT_EQ(sim.free_pages(), sim.capacity_pages());
}

TEST(SimAllocator, LargeRequestsUseScatteredFreePages) {
  // 1 MiB blocks, 1 kept in 4: every other page keeps a live block, the rest are free but
  // scattered. The driver remaps pages, so one request can take all the free ones (H100 table:
  // cudaMalloc 1 MiB keep 1/4 -> largest block = free memory).
  SimAllocator sim = make_sim(64_MiB);
  std::vector<void*> blocks = fill(sim, 1_MiB);
  ASSERT_EQ(blocks.size(), 64U);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i % 4 != 0) sim.deallocate(blocks[i], 1_MiB, {});
  }
  EXPECT_EQ(sim.free_pages(), 16U);
  EXPECT_TRUE(sim.allocate(32_MiB, {}).ok());
  EXPECT_FALSE(sim.allocate(2_MiB, {}).ok());
}

TEST(SimAllocator, OneLiveBlockPerPageLeavesNoRoomForAPage) {
  // The H100 measurement the model reproduces: 64 KiB blocks, 1 in 32 kept, 3% live, and a
  // 2 MiB request fails.
  SimAllocator sim = make_sim(1_GiB);
  std::vector<void*> blocks = fill(sim, 64_KiB);
  ASSERT_EQ(blocks.size(), 1_GiB / 64_KiB);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i % 32 != 0) sim.deallocate(blocks[i], 64_KiB, {});
  }
  EXPECT_EQ(sim.free_pages(), 0U);
  EXPECT_FALSE(sim.allocate(2_MiB, {}).ok());
  EXPECT_TRUE(sim.allocate(32_KiB, {}).ok()) << "small requests still fit in the holes";
}

TEST(SimAllocator, ReusesTheFirstHoleThatFits) {
  SimAllocator sim = make_sim(64_MiB);
  void* a = sim.allocate(64_KiB, {}).ptr;
  void* b = sim.allocate(64_KiB, {}).ptr;
  void* c = sim.allocate(64_KiB, {}).ptr;
  sim.deallocate(b, 64_KiB, {});
  EXPECT_EQ(sim.allocate(64_KiB, {}).ptr, b);
  sim.deallocate(a, 64_KiB, {});
  sim.deallocate(c, 64_KiB, {});
  // a's hole is too small for 128 KiB; c's joins the free rest of the page, so it goes there.
  EXPECT_EQ(sim.allocate(128_KiB, {}).ptr, c);
}

TEST(SimAllocator, CoalescesNeighboursOnBothSides) {
  SimAllocator sim = make_sim(64_MiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i)
    blocks.push_back(sim.allocate(64_KiB, {}).ptr);
  sim.deallocate(blocks[10], 64_KiB, {});
  sim.deallocate(blocks[12], 64_KiB, {});
  sim.deallocate(blocks[11], 64_KiB, {});  // joins 10 and 12
  EXPECT_EQ(sim.allocate(192_KiB, {}).ptr, blocks[10]);
  EXPECT_EQ(sim.reserved_bytes(), 2_MiB);
}

TEST(SimAllocator, RoundsSmallRequestsTo256Bytes) {
  SimAllocator sim = make_sim(64_MiB);
  const auto a = reinterpret_cast<std::uintptr_t>(sim.allocate(1, {}).ptr);
  const auto b = reinterpret_cast<std::uintptr_t>(sim.allocate(257, {}).ptr);
  const auto c = reinterpret_cast<std::uintptr_t>(sim.allocate(1, {}).ptr);
  EXPECT_EQ(b - a, 256U);
  EXPECT_EQ(c - b, 512U);
}

TEST(SimAllocator, RequestsOfAPageOrMoreTakeWholePages) {
  SimAllocator sim = make_sim(64_MiB);
  ASSERT_TRUE(sim.allocate(3_MiB, {}).ok());
  EXPECT_EQ(sim.reserved_bytes(), 4_MiB);
  ASSERT_TRUE(sim.allocate(2_MiB, {}).ok());
  EXPECT_EQ(sim.reserved_bytes(), 6_MiB);
}

TEST(SimAllocator, RefusesPastCapacityAndRecovers) {
  SimAllocator sim = make_sim(8_MiB);
  const AllocResult big = sim.allocate(8_MiB, {});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(sim.allocate(1, {}).status, AllocStatus::out_of_memory);
  EXPECT_EQ(sim.allocate(1ULL << 50U, {}).status, AllocStatus::out_of_memory);
  sim.deallocate(big.ptr, 8_MiB, {});
  EXPECT_TRUE(sim.allocate(8_MiB, {}).ok());
}

TEST(SimAllocator, IsDeterministic) {
  auto trace = [] {
    SimAllocator sim = make_sim(256_MiB);
    std::vector<void*> out;
    std::vector<void*> live;
    for (int i = 0; i < 2000; ++i) {
      const std::size_t size = (i % 7 == 0) ? 3_MiB : static_cast<std::size_t>(512 * (1 + i % 61));
      const AllocResult r = sim.allocate(size, {});
      out.push_back(r.ptr);
      if (r.ok() && i % 3 == 0) sim.deallocate(r.ptr, size, {});
    }
    return out;
  };
  EXPECT_EQ(trace(), trace());
}

TEST(SimAllocator, PointersAreDistinctWhileLive) {
  SimAllocator sim = make_sim(64_MiB);
  std::set<void*> seen;
  for (int i = 0; i < 1000; ++i) {
    const AllocResult r = sim.allocate(static_cast<std::size_t>(256 * (1 + i % 17)), {});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(seen.insert(r.ptr).second);
  }
}

TEST(SimAllocator, RejectsFreesOfPointersItNeverGave) {
  SimAllocator sim = make_sim(64_MiB);
  int local = 0;
  EXPECT_THROW(sim.deallocate(&local, 64, {}), std::logic_error);
  EXPECT_THROW(sim.deallocate(&local, 4_MiB, {}), std::logic_error);
}

TEST(SimAllocator, ZeroBytesIsSuccessWithoutMemory) {
  SimAllocator sim = make_sim(64_MiB);
  const AllocResult r = sim.allocate(0, {});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.ptr, nullptr);
  EXPECT_EQ(sim.reserved_bytes(), 0U);
  sim.deallocate(nullptr, 0, {});
}

TEST(SimAllocator, StateReportsFreeMemoryOfTheModel) {
  SimAllocator sim(SimAllocator::Options{.capacity_bytes = 64_MiB, .device_total_bytes = 80_GiB});
  ASSERT_TRUE(sim.allocate(5_MiB, {}).ok());
  const MemoryState s = sim.state();
  EXPECT_EQ(s.reserved_bytes, 6_MiB);
  EXPECT_EQ(s.device_free_bytes, 58_MiB);
  EXPECT_EQ(s.device_total_bytes, 80_GiB);
  EXPECT_TRUE(sim.simulated());
}

}  // namespace
}  // namespace oomlab
