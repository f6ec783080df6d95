// The run context on its own, over hand-built allocator chains: the OOM record for a cap refusal
// and for a failure that does not last, the block bookkeeping, and cleanup that survives a
// failing free.
#include "run/harness_context.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <vector>

#include "allocators/budget_cap.hpp"
#include "allocators/sim_allocator.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

class KeepEvents final : public EventSink {
 public:
  explicit KeepEvents(std::vector<Event>& events) : events_(events) {}
  void write(std::uint64_t /*first_seq*/, std::span<const Event> events) override {
    events_.insert(events_.end(), events.begin(), events.end());
  }

 private:
  std::vector<Event>& events_;
};

// Fails the `fail_at`-th allocation once, as a pool with a free still pending would.
class FailsOnce final : public AllocatorAdaptor {
 public:
  FailsOnce(std::unique_ptr<Allocator> inner, int fail_at)
      : AllocatorAdaptor(std::move(inner)), fail_at_(fail_at) {}

  void* poisoned_ = nullptr;
  int freed_ = 0;

 private:
  [[nodiscard]] std::string_view do_name() const override { return "fails-once"; }
  AllocResult do_allocate(std::size_t bytes, Stream s) override {
    if (++calls_ == fail_at_) return {nullptr, AllocStatus::out_of_memory, 0};
    return upstream().allocate(bytes, s);
  }
  void do_deallocate(void* p, std::size_t bytes, Stream s) override {
    if (p == poisoned_) throw std::runtime_error("free failed");
    upstream().deallocate(p, bytes, s);
    ++freed_;
  }
  [[nodiscard]] bool do_simulated() const override { return true; }

  int fail_at_;
  int calls_ = 0;
};

struct Harness {
  explicit Harness(std::unique_ptr<Allocator> backend, std::uint64_t budget)
      : log(std::make_unique<KeepEvents>(events)),
        recording(std::move(backend), log, Recording::Clock::now()),
        ctx(recording, phases, {.budget_bytes = budget, .simulated = true}) {}

  std::vector<Event> events;
  PhaseTable phases;
  EventLog log;
  Recording recording;
  HarnessContext ctx;
};

std::unique_ptr<Allocator> sim(std::uint64_t capacity) {
  return std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = capacity});
}

TEST(HarnessContext, ACapRefusalIsRecordedAsBudgetCapCapacity) {
  Harness h(std::make_unique<BudgetCap>(sim(1_TiB), 64_MiB, 64_KiB), 64_MiB);
  h.ctx.phase("fill");
  Block held = h.ctx.allocate(60_MiB, "held");
  ASSERT_TRUE(held.ok());
  const Block refused = h.ctx.allocate(8_MiB, "one too many");
  EXPECT_EQ(refused.status, AllocStatus::budget_cap);
  ASSERT_TRUE(h.ctx.oom().has_value());
  const OomRecord& oom = *h.ctx.oom();
  EXPECT_EQ(oom.source, "budget-cap");
  EXPECT_FALSE(oom.error.has_value());
  EXPECT_EQ(oom.diagnosis.cause, Cause::capacity);
  EXPECT_EQ(oom.diagnosis.free_bytes, 4_MiB);
  EXPECT_EQ(oom.request_label, "one too many");
  EXPECT_EQ(oom.phase, "fill");
  h.ctx.release_all();
  h.log.close();
  ASSERT_LT(oom.event, h.events.size());
  EXPECT_EQ(h.events[oom.event].op, Op::oom) << "oom.event is the seq of the oom row";
  EXPECT_EQ(h.events[oom.event].status, AllocStatus::budget_cap);
}

// The sim has no streams whose frees could still be pending: a failure there is never called
// transient, whatever a probe right after it says (a real device's case: Diagnose.Transient*).
TEST(HarnessContext, OnTheSimAFailureThatDoesNotLastIsNotCalledTransient) {
  Harness h(std::make_unique<FailsOnce>(sim(256_MiB), 3), 256_MiB);
  ASSERT_TRUE(h.ctx.allocate(1_MiB, "a").ok());
  ASSERT_TRUE(h.ctx.allocate(1_MiB, "b").ok());
  ASSERT_FALSE(h.ctx.allocate(1_MiB, "c").ok());
  ASSERT_TRUE(h.ctx.oom().has_value());
  EXPECT_NE(h.ctx.oom()->diagnosis.cause, Cause::transient) << h.ctx.oom()->diagnosis.evidence;
}

TEST(HarnessContext, OnlyTheFirstFailureIsTheRunsOom) {
  Harness h(sim(8_MiB), 8_MiB);
  EXPECT_FALSE(h.ctx.try_allocate(16_MiB, "expected").ok());
  EXPECT_FALSE(h.ctx.oom_recorded()) << "a failure the scenario expects is not the OOM";
  EXPECT_FALSE(h.ctx.allocate(32_MiB, "first").ok());
  EXPECT_FALSE(h.ctx.allocate(64_MiB, "second").ok());
  EXPECT_EQ(h.ctx.oom()->request_bytes, 32_MiB);
  EXPECT_EQ(h.recording.failed(), 3U);
}

TEST(HarnessContext, AStaleCopyOfAReleasedBlockCannotFreeItsSuccessor) {
  Harness h(sim(64_MiB), 64_MiB);
  Block first = h.ctx.allocate(64_KiB, "first");
  const Block stale = first;
  h.ctx.release(first);
  Block second = h.ctx.allocate(64_KiB, "second");  // same slot, same address on the sim
  ASSERT_EQ(second.ptr, stale.ptr);
  ASSERT_EQ(second.slot, stale.slot);
  Block copy = stale;
  EXPECT_THROW(h.ctx.release(copy), std::logic_error);
  EXPECT_EQ(h.ctx.live_bytes(), 64_KiB) << "the second block is still live";
  h.ctx.release(second);
  EXPECT_EQ(h.ctx.live_bytes(), 0U);
}

TEST(HarnessContext, CleanupFreesEveryBlockEvenWhenOneFreeFails) {
  auto backend = std::make_unique<FailsOnce>(sim(256_MiB), 0);
  FailsOnce& raw = *backend;
  Harness h(std::move(backend), 256_MiB);
  std::vector<Block> blocks;
  for (int i = 0; i < 10; ++i)
    blocks.push_back(h.ctx.allocate(1_MiB, "held"));
  raw.poisoned_ = blocks[3].ptr;
  EXPECT_THROW(h.ctx.release_all(), std::runtime_error);
  EXPECT_EQ(raw.freed_, 9) << "the nine other blocks were freed";
  raw.poisoned_ = nullptr;
}

// A replay's extension: the same context, reached through RunContext's one generic lookup.
TEST(HarnessContext, IsTheProgramReplayAReplayAsksFor) {
  Harness h(sim(8_MiB), 8_MiB);
  RunContext& as_a_scenario_sees_it = h.ctx;
  ProgramReplay* program = as_a_scenario_sees_it.extension<ProgramReplay>();
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(as_a_scenario_sees_it.find_extension("no-such-extension"), nullptr);
  EXPECT_FALSE(h.ctx.allocate(32_MiB, "too large").ok());
  program->describe_oom({.trace_entry = 41, .trace_line = 43, .frames = {"train.py:7"}});
  ASSERT_TRUE(h.ctx.oom().has_value());
  EXPECT_EQ(h.ctx.oom()->trace_entry, 41U) << "the OOM record names the trace entry";
  EXPECT_EQ(h.ctx.oom()->frames, std::vector<std::string>{"train.py:7"});
}

TEST(HarnessContext, CleanupIsItsOwnPhase) {
  Harness h(sim(64_MiB), 64_MiB);
  h.ctx.phase("work");
  (void)h.ctx.allocate(1_MiB, "left behind");
  h.ctx.release_all();
  h.log.close();
  EXPECT_EQ(h.phases.name(h.events.back().phase), "cleanup");
  EXPECT_EQ(h.events.back().op, Op::free);
}

}  // namespace
}  // namespace oomlab
