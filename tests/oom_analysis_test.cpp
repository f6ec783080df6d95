// Every branch of the cause decision, the leak fit and the largest-block bisection, on evidence
// built by hand.
#include "analysis/oom_analysis.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "oomlab/units.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

OomEvidence base_evidence() {
  return {.request_bytes = 2_MiB,
          .budget_bytes = 1_GiB,
          .live_bytes = 32_MiB,
          .largest_free_bytes = 0,
          .real_device = true,
          .device_free_at_start = 1_GiB,
          .device_free_now = 0,
          .own_bytes_bound = 1_GiB};
}

TEST(Diagnose, FragmentationWhenFreeInTotalButNoBlockFits) {
  const Diagnosis d = diagnose(base_evidence());
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_EQ(d.free_bytes, 1_GiB - 32_MiB);
  ASSERT_TRUE(d.fragmentation.has_value());
  EXPECT_DOUBLE_EQ(*d.fragmentation, 1.0);
  EXPECT_NE(d.evidence.find("under 2.00 MiB"), std::string::npos);
  EXPECT_NE(d.advice.find("expandable_segments"), std::string::npos);
}

// 1,000 live blocks of 2 MiB + 4 KiB each take two pages apiece: 3.9 GiB of pages under a 4 GiB
// budget that their 1.96 GiB of bytes would leave half free. A 200 MiB request cannot be placed
// however the blocks lie: capacity, and no fragmentation remedy is offered.
TEST(Diagnose, CapacityWhenTheLiveBlocksPagesLeaveNoRoom) {
  OomEvidence e = base_evidence();
  e.budget_bytes = 4_GiB;
  e.live_bytes = 1000 * (2_MiB + 4_KiB);
  e.live_footprint_bytes = 1000 * 4_MiB;
  e.request_bytes = 200_MiB;
  e.request_footprint_bytes = 200_MiB;
  e.device_free_at_start = 4_GiB;
  e.device_free_now = 4_GiB - 1000 * 4_MiB;
  e.own_bytes_bound = 1000 * 4_MiB;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::capacity) << d.evidence;
  EXPECT_NE(d.evidence.find("whole pages"), std::string::npos) << d.evidence;
  EXPECT_EQ(d.advice.find("expandable_segments"), std::string::npos) << d.advice;
  ASSERT_TRUE(d.footprint_bytes.has_value());
  EXPECT_EQ(*d.footprint_bytes, 1000 * 4_MiB + 200_MiB);
  // The same blocks in fewer pages leave room: then it is fragmentation again.
  e.live_footprint_bytes = e.live_bytes;
  EXPECT_EQ(diagnose(e).cause, Cause::fragmentation);
}

// A scenario whose own model says this part of the run needs more than the budget at its peak
// (growing-batch's next batch): capacity, whatever was free at the failing request.
TEST(Diagnose, CapacityWhenTheScenariosModelNeedsMoreThanTheBudget) {
  OomEvidence e = base_evidence();
  ASSERT_EQ(diagnose(e).cause, Cause::fragmentation);
  e.expected_peak_bytes = 1_GiB + 2_MiB;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_NE(d.evidence.find("own model needs 1.00 GiB"), std::string::npos) << d.evidence;
  e.expected_peak_bytes = 1_GiB;  // fits: the failure needs another explanation
  EXPECT_EQ(diagnose(e).cause, Cause::fragmentation);
}

TEST(Diagnose, FragmentationIsInferredWithoutAProbe) {
  OomEvidence e = base_evidence();
  e.largest_free_bytes.reset();
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_FALSE(d.fragmentation.has_value());
  EXPECT_NE(d.evidence.find("not probed"), std::string::npos);
}

TEST(Diagnose, CapacityWhenLivePlusRequestExceedsTheBudget) {
  OomEvidence e = base_evidence();
  e.live_bytes = 1_GiB - 1_MiB;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_EQ(d.free_bytes, 1_MiB);
  EXPECT_NE(d.evidence.find("> budget 1.00 GiB"), std::string::npos);
}

TEST(Diagnose, PartialFragmentationIsMeasured) {
  OomEvidence e = base_evidence();
  e.live_bytes = 512_MiB;
  e.request_bytes = 400_MiB;
  e.largest_free_bytes = 256_MiB;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_DOUBLE_EQ(*d.fragmentation, 0.5);
}

TEST(Diagnose, TransientWhenTheSameRequestFitsRightAfter) {
  OomEvidence e = base_evidence();
  e.request_bytes = 300_KiB;  // under the 2 MiB resolution of the largest-block search
  e.request_fits_now = true;
  EXPECT_EQ(diagnose(e).cause, Cause::transient);
  e.request_fits_now = false;
  EXPECT_EQ(diagnose(e).cause, Cause::fragmentation);
}

// Only a real device can have frees pending on a stream: the sim and a model of PyTorch's
// allocator answer the same request the same way every time.
TEST(Diagnose, NeverTransientWhereTheAllocatorIsDeterministic) {
  OomEvidence e = base_evidence();
  e.request_bytes = 300_KiB;
  e.request_fits_now = true;
  e.real_device = false;
  EXPECT_NE(diagnose(e).cause, Cause::transient);
  e.real_device = true;
  e.cache = CacheState{.framework = "pytorch", .allocated_bytes = 32_MiB, .reserved_bytes = 64_MiB};
  EXPECT_NE(diagnose(e).cause, Cause::transient);
}

// Behind a model of PyTorch's allocator, capacity is its own arithmetic: the blocks it hands
// out and the request as it rounds them, against what it can hold (reserved + the device's free).
TEST(Diagnose, BehindPyTorchCapacityIsItsBlocksAndTheRoundedRequestAgainstWhatItCanHold) {
  OomEvidence e = base_evidence();
  e.request_bytes = 1_GiB - 3_MiB;
  e.live_bytes = 7_GiB;  // what was asked for; PyTorch's blocks are larger
  e.budget_bytes = 7_GiB + 725_MiB + 694_MiB;
  e.device_free_at_start = e.budget_bytes;  // the ballast left the budget free
  e.own_bytes_bound = 7_GiB + 725_MiB;      // the cache's segments
  e.device_free_now = 694_MiB;
  e.cache = CacheState{.framework = "pytorch",
                       .allocated_bytes = 7_GiB + 400_MiB,
                       .reserved_bytes = 7_GiB + 725_MiB,
                       .failed_device_bytes = 1_GiB,
                       .failed_request_bytes = 1_GiB};
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::capacity) << d.evidence;  // 7.39 + 1 > 7.71 + 0.68 GiB
  EXPECT_NE(d.evidence.find("no setting of its allocator"), std::string::npos) << d.evidence;
  EXPECT_EQ(d.advice.find("expandable_segments"), std::string::npos) << d.advice;
  e.device_free_now = 800_MiB;  // now the bytes fit: the cache's placement is to blame
  d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::fragmentation) << d.evidence;
  EXPECT_NE(d.evidence.find("800 MiB free on the device"), std::string::npos) << d.evidence;
}

// The words are the framework's (CacheWords, found by CacheState::framework): PyTorch's when its
// model kept the state, the engine's own when no registered framework has the key.
TEST(Diagnose, ACacheIsToldInItsFrameworksWordsOrTheEnginesWhenNoneIsRegistered) {
  OomEvidence e = base_evidence();
  e.request_bytes = 100_MiB;
  e.budget_bytes = 7_GiB + 50_MiB;
  e.device_free_at_start = e.budget_bytes;  // the ballast left the budget free
  e.own_bytes_bound = 7_GiB;                // the cache's segments
  e.device_free_now = 50_MiB;
  e.cache = CacheState{.framework = "pytorch",
                       .allocated_bytes = 6_GiB,
                       .reserved_bytes = 7_GiB,
                       .failed_device_bytes = 100_MiB,
                       .failed_request_bytes = 100_MiB};
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.cause, Cause::fragmentation) << d.evidence;
  EXPECT_EQ(d.evidence.rfind("PyTorch reserved 7.00 GiB but allocated 6.00 GiB", 0), 0U)
      << d.evidence;
  EXPECT_NE(d.advice.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), std::string::npos)
      << d.advice;
  e.cache->framework = "no-such-framework";
  d = diagnose(e);
  ASSERT_EQ(d.cause, Cause::fragmentation) << d.evidence;
  EXPECT_EQ(d.evidence.rfind("the caching allocator reserved 7.00 GiB but allocated 6.00 GiB", 0),
            0U)
      << d.evidence;
  EXPECT_EQ(d.advice.find("PYTORCH"), std::string::npos) << d.advice;
  EXPECT_EQ(d.evidence.find("PyTorch"), std::string::npos) << d.evidence;
}

// Under set_per_process_memory_fraction PyTorch refuses at its cap: the device's free memory is
// no part of the story, what is left under the cap is.
TEST(Diagnose, UnderAFractionTheEvidenceCountsWhatIsLeftUnderTheCapNotTheDevice) {
  OomEvidence e = base_evidence();
  e.request_bytes = 1_GiB;
  e.budget_bytes = 8_GiB;
  e.device_free_at_start = 70_GiB + 7_GiB + 300_MiB;  // a cap, no ballast: the device was free
  e.own_bytes_bound = 7_GiB + 300_MiB;
  e.device_free_now = 70_GiB;
  e.cache = CacheState{.framework = "pytorch",
                       .allocated_bytes = 7_GiB,
                       .reserved_bytes = 7_GiB + 300_MiB,
                       .failed_device_bytes = 1_GiB,
                       .failed_request_bytes = 1_GiB,
                       .allowed_bytes = 8_GiB};
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::fragmentation) << d.evidence;
  EXPECT_EQ(d.evidence.find("free on the device"), std::string::npos) << d.evidence;
  EXPECT_NE(d.evidence.find("724 MiB left under its fraction cap of 8.00 GiB"), std::string::npos)
      << d.evidence;
}

TEST(Diagnose, ARefusalByTheCapIsCapacityWhenWhatIsLiveCannotTakeTheRequest) {
  OomEvidence e = base_evidence();
  e.real_device = false;
  e.live_bytes = 900_MiB;
  e.request_bytes = 120_MiB;
  e.cap_bytes = 1_GiB - 8_MiB;
  e.cap_charged_bytes = 910_MiB;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_EQ(d.free_bytes, 1_GiB - 8_MiB - 900_MiB) << "free is measured against the cap";
  EXPECT_NE(d.evidence.find("> cap"), std::string::npos) << d.evidence;
}

TEST(Diagnose, ARefusalByTheCapIsFragmentationWhenPinnedPagesHoldIt) {
  // Managed memory after 31 of 32 blocks were freed: 32 MiB live, the whole cap still held.
  OomEvidence e = base_evidence();
  e.real_device = false;
  e.live_bytes = 32_MiB;
  e.request_bytes = 2_MiB;
  e.cap_bytes = 1_GiB - 8_MiB;
  e.cap_charged_bytes = 1_GiB - 8_MiB;
  e.largest_free_bytes = 0;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_NE(d.evidence.find("is held against it"), std::string::npos) << d.evidence;
}

TEST(Diagnose, ExternalPressureWhenTheDeviceLostMoreThanTheRunHolds) {
  OomEvidence e = base_evidence();
  e.own_bytes_bound = 100_MiB;  // the run holds 100 MiB, yet the device lost 1 GiB
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::external_pressure);
  EXPECT_EQ(d.external_bytes, 1_GiB - 100_MiB);
  EXPECT_NE(d.advice.find("another process"), std::string::npos);
}

// Several processes placing their ballasts at once: the others had already taken 100 MiB of this
// run's 2 GiB when its baseline was read, so the device's free memory fell by no more than the
// run holds, yet the run met the wall 100 MiB early (as measured on an H200).
TEST(Diagnose, ExternalPressureWhenOthersTookPartOfTheBudgetBeforeTheBaseline) {
  OomEvidence e = base_evidence();
  e.budget_bytes = 2_GiB;
  e.device_free_at_start = 2_GiB - 100_MiB;
  e.own_bytes_bound = 2_GiB - 166_MiB;
  e.device_free_now = 66_MiB;
  e.leak.detected = true;  // a leak is there too, but it is not what refused the request
  e.leak.bytes_per_step = 8.0 * 1024 * 1024;
  e.leak.samples = 100;
  const Diagnosis d = diagnose(e);
  EXPECT_EQ(d.cause, Cause::external_pressure);
  EXPECT_EQ(d.external_bytes, 100_MiB);
  EXPECT_NE(d.evidence.find("100 MiB short of its 2.00 GiB budget"), std::string::npos)
      << d.evidence;
}

TEST(Diagnose, NoExternalPressureOnTheSim) {
  OomEvidence e = base_evidence();
  e.real_device = false;
  e.own_bytes_bound = 0;
  EXPECT_EQ(diagnose(e).cause, Cause::fragmentation);
}

TEST(Diagnose, SmallDriftIsNotExternalPressure) {
  OomEvidence e = base_evidence();
  e.own_bytes_bound = 1_GiB - 16_MiB;  // 16 MiB unexplained: under the 32 MiB threshold
  EXPECT_EQ(diagnose(e).cause, Cause::fragmentation);
}

TEST(Diagnose, LeakComesBeforeCapacity) {
  OomEvidence e = base_evidence();
  e.live_bytes = 1_GiB;
  e.leak.detected = true;
  e.leak.bytes_per_step = 4.0 * 1024 * 1024;
  e.leak.samples = 256;
  EXPECT_EQ(diagnose(e).cause, Cause::leak);
}

TEST(FitLeak, RecoversTheSlopeOfSteadyGrowth) {
  std::vector<StepSample> samples;
  for (std::uint64_t s = 0; s < 100; ++s)
    samples.push_back({s, 100_MiB + s * 3_MiB});
  const LeakFit fit = fit_leak(samples, 1_GiB);
  EXPECT_NEAR(fit.bytes_per_step, 3.0 * 1024 * 1024, 1.0);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-9);
  EXPECT_TRUE(fit.detected);
  ASSERT_TRUE(fit.predicted_oom_step.has_value());
  EXPECT_NEAR(*fit.predicted_oom_step, (1024.0 - 100.0) / 3.0, 1e-6);
}

TEST(FitLeak, FlatOrNoisyOrShortIsNoLeak) {
  std::vector<StepSample> flat;
  for (std::uint64_t s = 0; s < 50; ++s)
    flat.push_back({s, 500_MiB});
  EXPECT_FALSE(fit_leak(flat, 1_GiB).detected);

  std::vector<StepSample> noisy;
  for (std::uint64_t s = 0; s < 50; ++s)
    noisy.push_back({s, (s % 2 == 0) ? 100_MiB : 600_MiB + s});
  EXPECT_FALSE(fit_leak(noisy, 1_GiB).detected);

  std::vector<StepSample> restarted;  // step numbers that go back (a new trial) must not wrap
  for (std::uint64_t s = 10; s < 40; ++s)
    restarted.push_back({s, 500_MiB});
  for (std::uint64_t s = 0; s < 10; ++s)
    restarted.push_back({s, 500_MiB + s});
  EXPECT_FALSE(fit_leak(restarted, 1_GiB).detected);

  const std::vector<StepSample> short_run = {{0, 0}, {1, 100_MiB}, {2, 200_MiB}};
  EXPECT_FALSE(fit_leak(short_run, 1_GiB).detected) << "fewer than kLeakMinSamples";

  std::vector<StepSample> tiny;
  for (std::uint64_t s = 0; s < 50; ++s)
    tiny.push_back({s, 100_MiB + s * 4096});
  EXPECT_FALSE(fit_leak(tiny, 1_GiB).detected) << "steady but negligible at this budget";
}

TEST(FindLargestFree, BisectsToTheResolution) {
  for (const std::uint64_t truth : {std::size_t{0}, 2_MiB, 6_MiB, 998_MiB, 1000_MiB, 1024_MiB}) {
    int probes = 0;
    const std::uint64_t found = find_largest_free(
        [&](std::uint64_t bytes) {
          ++probes;
          return bytes <= truth ? AllocStatus::ok : AllocStatus::out_of_memory;
        },
        1_GiB, 2_MiB);
    EXPECT_EQ(found, truth / 2_MiB * 2_MiB) << "truth " << truth;
    EXPECT_LE(probes, 11) << "log2(512) + 2 probes at most";
  }
}

TEST(FindLargestFree, NothingToSearchBelowOneUnit) {
  int probes = 0;
  EXPECT_EQ(find_largest_free(
                [&](std::uint64_t) {
                  ++probes;
                  return AllocStatus::ok;
                },
                1_MiB, 2_MiB),
            0U);
  EXPECT_EQ(probes, 0);
}

}  // namespace
}  // namespace oomlab
