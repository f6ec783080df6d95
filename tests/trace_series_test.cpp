// A trace at any value of a parameter from traces at two or more (trace/trace_series.hpp): the
// requests aligned, each size a line in the value, the trace made at the value asked.
#include "trace/trace_series.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "oomlab/error.hpp"
#include "oomlab/trace_builder.hpp"
#include "trace/series_align.hpp"

namespace oomlab::trace {
namespace {

struct Request {
  std::uint64_t fixed = 0;     // bytes at any batch
  std::uint64_t per_item = 0;  // and per 1 of the batch
  bool only_from_two = false;  // asked only at batch 2 and more (a workspace)
  bool freed_at_once = true;   // freed right after (else at the end)
};

// A program that asks for `requests` in order at `batch`: an activation freed at once, a weight
// kept, and so on; addresses of its own, and each request's frame ("layerN (model.py:N)") where
// `frames`.
std::shared_ptr<const Trace> program_at(std::uint64_t batch, const std::vector<Request>& requests,
                                        bool frames = true) {
  TraceBuilder b(Format::oomlab, fmt::format("b{}.csv", batch));
  b.trace().recorded.emplace();
  RecordedState& recorded = *b.trace().recorded;
  for (std::size_t i = 0; i < requests.size(); ++i)
    recorded.stacks.push_back({fmt::format("layer{} (model.py:{})", i, i)});
  const auto framed = [&](std::size_t request) {
    if (!frames) return;
    recorded.event_stacks.resize(b.trace().events.size(), Event::kNone);
    recorded.event_stacks.back() = static_cast<std::uint32_t>(request);
  };
  std::uint64_t index = 0;
  std::vector<std::uint64_t> kept;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    if (r.only_from_two && batch < 2) continue;
    const std::uint64_t address = 0x1000 * (i + 1);
    b.add(Op::alloc, r.fixed + r.per_item * batch, address, 0, 0, index, index, index + 1);
    framed(i);
    ++index;
    if (r.freed_at_once) {
      b.add(Op::free, 0, address, 0, 0, index, index, index + 1);
      ++index;
    } else {
      kept.push_back(address);
    }
  }
  for (const std::uint64_t address : kept) {
    b.add(Op::free, 0, address, 0, 0, index, index, index + 1);
    ++index;
  }
  return std::make_shared<const Trace>(b.finish());
}

std::vector<std::uint64_t> alloc_sizes(const Trace& t) {
  std::vector<std::uint64_t> out;
  for (const Event& e : t.events) {
    if (e.op == Op::alloc) out.push_back(e.bytes);
  }
  return out;
}

const std::vector<Request> kTraining = {
    {.fixed = 1 << 20, .freed_at_once = false},  // a weight
    {.per_item = 3 * 4096},                      // an activation
    {.fixed = 512, .per_item = 1000, .freed_at_once = false},
    {.per_item = 77 * 768 * 2},
};

TEST(TraceSeries, TheTraceAtEightFromOneAndTwoIsTheProgramsOwnWhereSizesAreLines) {
  const TraceSeries series("batch", {{1, program_at(1, kTraining)}, {2, program_at(2, kTraining)}});
  EXPECT_FALSE(series.misaligned());
  EXPECT_EQ(series.fit().requests, 4U);
  EXPECT_EQ(series.fit().matched, 4U);
  EXPECT_EQ(series.fit().scaling, 3U);
  const Trace made = series.at(8);
  const std::shared_ptr<const Trace> real = program_at(8, kTraining);
  EXPECT_EQ(alloc_sizes(made), alloc_sizes(*real));
  EXPECT_EQ(made.demand.peak_live_bytes, real->demand.peak_live_bytes);
  EXPECT_EQ(made.slots, real->slots);
  ASSERT_EQ(made.events.size(), real->events.size());
  for (std::size_t i = 0; i < made.events.size(); ++i)
    EXPECT_EQ(made.events[i].op, real->events[i].op) << i;
}

TEST(TraceSeries, ARequestAtSomeValuesOnlyIsAlignedAroundAndCounted) {
  std::vector<Request> with_workspace = kTraining;
  with_workspace.insert(with_workspace.begin() + 2, {.fixed = 64 << 20, .only_from_two = true});
  const TraceSeries series(
      "batch", {{2, program_at(2, with_workspace)}, {1, program_at(1, with_workspace)}});
  EXPECT_EQ(series.points().front().value, 1U);  // put in order
  EXPECT_EQ(series.fit().anchor_only, 1U);
  EXPECT_EQ(series.fit().matched, 4U);
  // The workspace keeps the anchor's size; every other request is on its line.
  EXPECT_EQ(alloc_sizes(series.at(5)), alloc_sizes(*program_at(5, with_workspace)));
}

TEST(TraceSeries, ThreeValuesNameTheRequestsOffTheLine) {
  std::vector<Request> odd = kTraining;
  const auto at = [&](std::uint64_t batch) {
    std::vector<Request> r = odd;
    r[1].per_item = batch == 4 ? 5 * 4096 : 3 * 4096;  // chosen per shape, not a line
    return program_at(batch, r);
  };
  const TraceSeries series("batch", {{1, at(1)}, {2, at(2)}, {4, at(4)}});
  EXPECT_EQ(series.fit().off_line, 1U);
  ASSERT_EQ(series.fit().off_line_places.size(), 1U);
  EXPECT_EQ(series.fit().off_line_places[0].second, 1U);
  // Off the line, a request follows its last two sizes: 3·4096·2 at 2, 5·4096·4 at 4.
  const std::uint64_t at2 = 3 * 4096 * 2;
  const std::uint64_t at4 = 5 * 4096 * 4;
  EXPECT_EQ(series.size_at(1, 8), at4 + 2 * (at4 - at2));
}

TEST(TraceSeries, ProgramsThatDoNotMakeTheSameRequestsAreSaidToBeMisaligned) {
  std::vector<Request> other;
  for (int i = 0; i < 40; ++i)
    other.push_back({.fixed = 4096, .freed_at_once = i % 3 != 0});
  const TraceSeries series("batch", {{1, program_at(1, kTraining)}, {2, program_at(2, other)}});
  ASSERT_TRUE(series.misaligned());
  EXPECT_NE(series.misaligned()->find("have a counterpart at batch=1"), std::string::npos)
      << *series.misaligned();
}

TEST(TraceSeries, ASeriesNeedsTwoDistinctValues) {
  EXPECT_THROW(TraceSeries("batch", {{1, program_at(1, kTraining)}}), Error);
  EXPECT_THROW(TraceSeries("batch", {{1, program_at(1, kTraining)}, {1, program_at(1, kTraining)}}),
               Error);
}

// Refusable: each transient request (here the activations freed at once) a failed request the
// program survives, its free gone; one after the last allocation stays an allocation, since a
// refusal there would end the program.
TEST(TraceSeries, RefusableTransientsAreFailedRequestsThatHoldNothing) {
  const TraceSeries series("batch", {{1, program_at(1, kTraining)}, {2, program_at(2, kTraining)}});
  ASSERT_EQ(series.fit().transient, 2U);
  const Trace lines = series.at(8);
  const Trace refusable = series.at(8, TraceSeries::Rule::refusable);
  std::vector<std::uint64_t> failed;
  for (std::uint32_t i = 0; i < refusable.events.size(); ++i) {
    const Event e = refusable.events[i];
    if (e.op != Op::failed) continue;
    failed.push_back(e.bytes);
    EXPECT_TRUE(survived_failure(refusable, i)) << i;
  }
  EXPECT_EQ(failed, std::vector<std::uint64_t>{3 * 4096 * 8});  // the first activation
  EXPECT_EQ(refusable.events.size(), lines.events.size() - 1);  // and its free, gone
  EXPECT_EQ(alloc_sizes(refusable).size(), alloc_sizes(lines).size() - 1);
  EXPECT_EQ(refusable.demand.failures, 1U);
  EXPECT_EQ(fatal_failure_at(refusable), Event::kNone);
}

// One call (group_norm) makes one tensor and its statistics at batch 1, two tensors and its
// statistics at batch 2, all with the same frames: the statistics are matched to each other,
// and the second tensor is the anchor's own, never a line through 64 bytes and 256 KiB.
TEST(TraceSeries, ATinyRequestIsNeverMatchedToATensor) {
  const auto call_at = [](std::uint64_t batch) {
    TraceBuilder b(Format::oomlab, fmt::format("b{}.csv", batch));
    b.trace().recorded.emplace();
    b.trace().recorded->stacks.push_back({"group_norm (functional.py:2990)"});
    std::vector<std::uint64_t> sizes = {(128U << 10U) * batch};
    if (batch >= 2) sizes.push_back((128U << 10U) * batch);
    sizes.push_back(64 * batch);
    std::uint64_t index = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      b.add(Op::alloc, sizes[i], 0x1000 * (i + 1), 0, 0, index, index, index + 1);
      b.trace().recorded->event_stacks.resize(b.trace().events.size(), 0);
      ++index;
    }
    for (std::size_t i = 0; i < sizes.size(); ++i, ++index)
      b.add(Op::free, 0, 0x1000 * (i + 1), 0, 0, index, index, index + 1);
    return std::make_shared<const Trace>(b.finish());
  };
  const TraceSeries series("batch", {{1, call_at(1)}, {2, call_at(2)}});
  EXPECT_EQ(series.fit().matched, 2U);
  EXPECT_EQ(series.fit().anchor_only, 1U);
  const std::vector<std::uint64_t> want = {(128U << 10U) * 8, 256U << 10U, 64 * 8};
  EXPECT_EQ(alloc_sizes(series.at(8)), want);
}

TEST(SeriesAlign, TheShortestEditMatchesAroundInsertionsAndDeletions) {
  const std::vector<std::uint64_t> other = {1, 2, 3, 4, 5, 6, 7};
  const std::vector<std::uint64_t> anchor = {1, 9, 2, 3, 5, 6, 8, 7};
  const auto m = align_keys(other, anchor, 10);
  ASSERT_TRUE(m);
  const std::vector<std::uint32_t> want = {0, Event::kNone, 1, 2, 4, 5, Event::kNone, 6};
  EXPECT_EQ(*m, want);
  EXPECT_FALSE(align_keys({1, 2, 3, 4}, {5, 6, 7, 8}, 3));  // 8 edits needed
}

// A request that grows faster than the value (attention over a sequence's length) in a format
// that records no frames stays on its line: only a format whose series may shift pairs
// (FormatInfo::shifted_pairs, XLA's log) takes a pair that outgrew the value for a shift.
TEST(TraceSeries, AFramelessRequestThatOutgrowsTheValueStaysOnItsLine) {
  const auto at = [](std::uint64_t seq) {
    TraceBuilder b(Format::oomlab, fmt::format("s{}.csv", seq));
    b.add(Op::alloc, (1U << 20U) * seq * seq, 0x1000, 0, 0, 0, 0, 1);
    b.add(Op::free, 0, 0x1000, 0, 0, 1, 1, 2);
    return std::make_shared<const Trace>(b.finish());
  };
  const TraceSeries series("seq", {{1, at(1)}, {4, at(4)}});
  // The line through 1 MiB at 1 and 16 MiB at 4: 5 MiB a step, 36 MiB at 8.
  EXPECT_EQ(alloc_sizes(series.at(8)), std::vector<std::uint64_t>{36U << 20U});
}

}  // namespace
}  // namespace oomlab::trace
