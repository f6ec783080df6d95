// Capabilities through adaptors: a torch model wrapped in the caps a run composes still reports
// PyTorch's account and its device calls, and still rebuilds a replayed program's segments; a
// backend without the capability says so with null.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/device_usage_cap.hpp"
#include "device/device.hpp"
#include "oomlab/caching_allocator.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;

std::unique_ptr<Allocator> torch_model(std::uint64_t budget, const char* upstream = "sim",
                                       std::optional<int> device = std::nullopt,
                                       Stream stream = {}) {
  Params options(find_backend("torch")->options);
  options.set("upstream", std::string(upstream));
  return make_backend(torch::torch_kind(), options,
                      {.budget_bytes = budget, .device = device, .stream = stream});
}

// What the capped model reports after a 3 MiB request and a placed segment.
void expect_cache_seen_through(Allocator& capped) {
  CachingAllocator* cache = capped.capability<CachingAllocator>();
  ASSERT_NE(cache, nullptr) << "the cap hid the model's capability";
  const AllocResult r = capped.allocate(3_MiB, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cache->cache_state().allocated_bytes, 3_MiB);
  EXPECT_EQ(cache->cache_state().reserved_bytes, 20_MiB);  // large_segment_size for 1 to 10 MiB
  ASSERT_EQ(cache->device_calls().size(), 1U);
  EXPECT_EQ(cache->device_calls()[0].kind, DeviceCallKind::segment_alloc);
  EXPECT_EQ(cache->device_calls()[0].bytes, 20_MiB);
  const PlacedSegment segment{
      .bytes = 32_MiB,
      .blocks = {{.offset = 0, .bytes = 2_MiB}, {.offset = 16_MiB, .bytes = 4_MiB}}};
  const std::vector<AllocResult> placed = allocate_placed(capped, {&segment, 1});
  ASSERT_EQ(placed.size(), 2U);
  ASSERT_TRUE(placed[0].ok() && placed[1].ok());
  EXPECT_EQ(static_cast<char*>(placed[1].ptr) - static_cast<char*>(placed[0].ptr), 16_MiB)
      << "the blocks keep their offsets in their segment";
  EXPECT_EQ(cache->cache_state().reserved_bytes, 52_MiB);
  EXPECT_EQ(cache->device_calls().size(), 1U) << "placing is not a call the run made";
  capped.deallocate(placed[0].ptr, 2_MiB, {});
  capped.deallocate(placed[1].ptr, 4_MiB, {});
  capped.deallocate(r.ptr, 3_MiB, {});
}

TEST(AllocatorCapability, TheSimHasNoCache) {
  const std::unique_ptr<Allocator> sim =
      make_backend(BackendKind::sim, Params(find_backend("sim")->options), {.budget_bytes = 1_GiB});
  EXPECT_EQ(sim->capability<CachingAllocator>(), nullptr);
  const PlacedSegment segment{.bytes = 8_MiB, .blocks = {{.offset = 4_MiB, .bytes = 1_MiB}}};
  const std::vector<AllocResult> placed = allocate_placed(*sim, {&segment, 1});
  ASSERT_EQ(placed.size(), 1U);
  EXPECT_TRUE(placed[0].ok()) << "without the capability each block is allocated alone";
  sim->deallocate(placed[0].ptr, 1_MiB, {});
}

TEST(AllocatorCapability, ATorchModelUnderABudgetCapStillReportsItsCache) {
  BudgetCap capped(torch_model(1_GiB), 1_GiB, 64_KiB);
  expect_cache_seen_through(capped);
  EXPECT_EQ(capped.accounted_bytes(), 0U) << "every placed block went through the cap and back";
}

TEST(AllocatorCapability, PlacedBlocksPastTheCapAreRefusedByIt) {
  BudgetCap capped(torch_model(1_GiB), 5_MiB, 64_KiB);
  const PlacedSegment segment{
      .bytes = 32_MiB,
      .blocks = {{.offset = 0, .bytes = 4_MiB}, {.offset = 16_MiB, .bytes = 4_MiB}}};
  const std::vector<AllocResult> placed = allocate_placed(capped, {&segment, 1});
  ASSERT_EQ(placed.size(), 2U);
  EXPECT_TRUE(placed[0].ok());
  EXPECT_EQ(placed[1].status, AllocStatus::budget_cap);
  const CacheState cache = capped.capability<CachingAllocator>()->cache_state();
  EXPECT_EQ(cache.allocated_bytes, 4_MiB) << "the refused block went back to the model's cache";
  EXPECT_EQ(cache.reserved_bytes, 32_MiB);
  capped.deallocate(placed[0].ptr, 4_MiB, {});
}

// DeviceUsageCap reads the device's free memory, so this one needs a GPU; the model's segments
// are real cudaMalloc calls.
TEST(AllocatorCapability, ATorchModelUnderBothCapsOfADeviceStillReportsItsCache) {
  OOMLAB_REQUIRE_GPU();
#if defined(OOMLAB_WITH_CUDA)
  const DeviceSession session(0);
  auto device_capped =
      std::make_unique<DeviceUsageCap>(torch_model(1_GiB, "cuda", 0, session.stream()), 1_GiB);
  BudgetCap capped(std::move(device_capped), 1_GiB, 64_KiB);
  expect_cache_seen_through(capped);
#endif
}

}  // namespace
}  // namespace oomlab
