// Trace::events holds events packed (oomlab/trace_events.hpp): every field read back as it was put,
// whatever its range, and a trace like a real allocator log in well under 24 bytes an event.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "oomlab/rng.hpp"
#include "oomlab/trace_events.hpp"

namespace oomlab {
namespace {

using trace::Event;
using trace::EventStore;
using trace::Op;

void expect_same(const Event& a, const Event& b, std::size_t i) {
  EXPECT_EQ(a.bytes, b.bytes) << i;
  EXPECT_EQ(a.t_ns, b.t_ns) << i;
  EXPECT_EQ(a.index, b.index) << i;
  EXPECT_EQ(a.line, b.line) << i;
  EXPECT_EQ(a.slot, b.slot) << i;
  EXPECT_EQ(a.stream, b.stream) << i;
  EXPECT_EQ(a.op, b.op) << i;
  EXPECT_EQ(a.preexisting, b.preexisting) << i;
}

// Events whose fields take any value, extremes included, in runs that vary in range.
std::vector<Event> wild_events(std::size_t n) {
  Rng rng(7);
  std::vector<Event> events;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng.next();
    const bool extreme = (r & 63U) == 0;
    const auto op = static_cast<Op>(r % 3);
    events.push_back(Event{
        .bytes = extreme ? UINT64_MAX - (r >> 8) % 3 : (r >> 4) % (std::uint64_t{1} << (i % 40)),
        .t_ns = extreme ? UINT64_MAX : i * 1000 + (r >> 20) % 5000,
        .index = i * 3,
        .line = (i / 5000) % 2 == 0 ? 0 : i * 3 + 2,
        .slot = (r >> 30) % 7 == 0 ? Event::kNone : static_cast<std::uint32_t>((r >> 33) % 70'000),
        .stream = static_cast<std::uint32_t>((r >> 50) % 3),
        .op = op,
        .preexisting = ((r >> 61) & 1U) != 0});
  }
  return events;
}

TEST(EventStore, EveryFieldReadsBackAsItWasPut) {
  const std::vector<Event> events = wild_events(3 * 4096 + 1000);
  EventStore store;
  for (const Event& e : events)
    store.push_back(e);
  ASSERT_EQ(store.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    expect_same(store[i], events[i], i);
  std::size_t i = 0;
  for (const Event& e : store) {  // the iterator reads the same
    expect_same(e, events[i], i);
    ++i;
  }
  EXPECT_EQ(i, events.size());
  trace::EventReader reader(store);  // a chunk at a time, and back
  for (const std::size_t k : {std::size_t{5000}, std::size_t{10}, events.size() - 1,
                              std::size_t{4095}, std::size_t{4096}})
    expect_same(reader[k], events[k], k);
  for (std::size_t k = 0; k < events.size(); ++k)
    expect_same(reader[k], events[k], k);
}

TEST(EventStore, TheLastEventCanBeCompletedBeforeTheNext) {
  EventStore store;
  for (std::uint32_t i = 0; i < 4096 * 2; ++i) {
    store.push_back(Event{.bytes = i});
    store.last().preexisting = i % 2 == 0;
  }
  for (std::uint32_t i = 0; i < 4096 * 2; ++i) {
    ASSERT_EQ(store[i].bytes, i) << i;
    ASSERT_EQ(store[i].preexisting, i % 2 == 0) << i;
  }
}

// An allocator log's shape: sizes up to 4 MiB, a few hundred blocks live, a microsecond or so
// between events, every row an event, two streams.
TEST(EventStore, AnAllocatorLogTakesUnderSixteenBytesAnEvent) {
  Rng rng(11);
  EventStore store;
  constexpr std::size_t kEvents = 1'000'000;
  std::uint64_t t = 0;
  for (std::size_t i = 0; i < kEvents; ++i) {
    t += 200 + rng.next() % 2000;
    store.push_back(Event{.bytes = 4096 + rng.next() % (4U << 20U),
                          .t_ns = t,
                          .index = i,
                          .line = i + 2,
                          .slot = static_cast<std::uint32_t>(rng.next() % 512),
                          .stream = static_cast<std::uint32_t>(rng.next() % 2),
                          .op = i % 2 == 0 ? Op::alloc : Op::free});
  }
  const double per_event = static_cast<double>(store.bytes_held()) / kEvents;
  EXPECT_LT(per_event, 16.0);
  EXPECT_GT(per_event, 8.0) << "a size, a time, a row and a slot cannot take less";
  EXPECT_EQ(store[kEvents - 1].t_ns, t);
}

}  // namespace
}  // namespace oomlab
