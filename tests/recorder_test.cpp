// The recorder: every allocate, free and probe becomes one event with the right live bytes; the
// log keeps order across chunks; events.csv has the contract's columns and parses back.
#include <gtest/gtest.h>
#include <libfccp/csv.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "allocators/sim_allocator.hpp"
#include "oomlab/error.hpp"
#include "record/csv_sink.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// Keeps what it is given, for inspection.
class MemorySink final : public EventSink {
 public:
  explicit MemorySink(std::vector<Event>& events, std::vector<std::uint64_t>& firsts)
      : events_(events), firsts_(firsts) {}
  void write(std::uint64_t first_seq, std::span<const Event> events) override {
    firsts_.push_back(first_seq);
    events_.insert(events_.end(), events.begin(), events.end());
  }

 private:
  std::vector<Event>& events_;
  std::vector<std::uint64_t>& firsts_;
};

class FailingSink final : public EventSink {
 public:
  void write(std::uint64_t /*first_seq*/, std::span<const Event> /*events*/) override {
    throw Error(ErrorKind::io, "disk full");
  }
};

std::unique_ptr<Allocator> sim(std::uint64_t capacity) {
  return std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = capacity});
}

TEST(Recording, WritesOneEventPerCallWithLiveBytes) {
  std::vector<Event> events;
  std::vector<std::uint64_t> firsts;
  EventLog log(std::make_unique<MemorySink>(events, firsts));
  Recording rec(sim(8_MiB), log, Recording::Clock::now());
  const AllocResult a = rec.allocate(1_MiB, {});
  const AllocResult b = rec.allocate(3_MiB, {});
  const AllocResult too_big = rec.allocate(16_MiB, {});
  EXPECT_EQ(rec.probe(2_MiB, {}), AllocStatus::ok);
  rec.deallocate(a.ptr, 1_MiB, {});
  rec.set_step(7);
  rec.mark();
  rec.deallocate(b.ptr, 3_MiB, {});
  log.close();

  ASSERT_EQ(events.size(), 7U);
  EXPECT_EQ(events[0].op, Op::alloc);
  EXPECT_EQ(events[0].live_bytes, 1_MiB);
  EXPECT_EQ(events[0].reserved_bytes, 2_MiB);
  EXPECT_EQ(events[1].live_bytes, 4_MiB);
  EXPECT_EQ(events[1].ptr, reinterpret_cast<std::uint64_t>(b.ptr));
  EXPECT_EQ(events[2].op, Op::oom);
  EXPECT_EQ(events[2].status, AllocStatus::out_of_memory);
  EXPECT_EQ(events[2].bytes, 16_MiB);
  EXPECT_FALSE(too_big.ok());
  EXPECT_EQ(events[3].op, Op::probe);
  EXPECT_EQ(events[3].live_bytes, 4_MiB) << "a probe is not live";
  EXPECT_EQ(events[4].op, Op::free);
  EXPECT_EQ(events[4].live_bytes, 3_MiB);
  EXPECT_EQ(events[5].op, Op::mark);
  EXPECT_EQ(events[5].step, 7U);
  EXPECT_EQ(events[6].op, Op::free);
  EXPECT_EQ(events[6].live_bytes, 0U);
  EXPECT_EQ(events[6].step, 7U) << "events after a mark carry its step";
  EXPECT_EQ(rec.live_bytes(), 0U);
  EXPECT_EQ(rec.peak_live_bytes(), 4_MiB);
  EXPECT_EQ(rec.allocations(), 2U);
  EXPECT_EQ(rec.frees(), 2U);
  EXPECT_EQ(rec.failed(), 1U);
  for (std::size_t i = 1; i < events.size(); ++i)
    EXPECT_GE(events[i].t_ns, events[i - 1].t_ns);
}

TEST(EventLog, KeepsOrderAndSequenceAcrossManyChunks) {
  std::vector<Event> events;
  std::vector<std::uint64_t> firsts;
  const std::size_t count = EventLog::kChunkEvents * 5 + 123;
  {
    EventLog log(std::make_unique<MemorySink>(events, firsts));
    for (std::size_t i = 0; i < count; ++i)
      log.append(Event{.bytes = i});
    EXPECT_EQ(log.size(), count);
    log.close();
  }
  ASSERT_EQ(events.size(), count);
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(events[i].bytes, i);
  ASSERT_EQ(firsts.size(), 6U);
  for (std::size_t c = 0; c < firsts.size(); ++c)
    EXPECT_EQ(firsts[c], c * EventLog::kChunkEvents);
}

// Takes its time over every chunk, as a slow disk would.
class SlowSink final : public EventSink {
 public:
  explicit SlowSink(std::vector<std::uint64_t>& bytes) : bytes_(bytes) {}
  void write(std::uint64_t /*first_seq*/, std::span<const Event> events) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (const Event& e : events)
      bytes_.push_back(e.bytes);
  }

 private:
  std::vector<std::uint64_t>& bytes_;
};

TEST(EventLog, WaitsForASlowWriterInsteadOfGrowingWithoutBound) {
  std::vector<std::uint64_t> written;
  const std::size_t count = EventLog::kChunkEvents * (EventLog::kMaxChunks + 20);
  EventLog log(std::make_unique<SlowSink>(written));
  for (std::size_t i = 0; i < count; ++i)
    log.append(Event{.bytes = i});
  EXPECT_LE(log.chunks_made(), EventLog::kMaxChunks);
  log.close();
  ASSERT_EQ(written.size(), count);
  for (std::size_t i = 0; i < count; i += 4099)
    ASSERT_EQ(written[i], i);
}

TEST(EventLog, ReportsASinkFailureAtClose) {
  EventLog log(std::make_unique<FailingSink>());
  for (std::size_t i = 0; i < EventLog::kChunkEvents * 3; ++i)
    log.append(Event{});
  EXPECT_THROW(log.close(), Error);
}

TEST(CsvFileSink, WritesTheContractColumnsAndParsesBack) {
  const auto path = std::filesystem::temp_directory_path() / "oomlab_recorder_test_events.csv";
  PhaseTable phases;
  const std::uint32_t grow = phases.intern("grow, then \"shrink\"");
  {
    EventLog log(std::make_unique<CsvFileSink>(path, phases));
    Recording rec(sim(8_MiB), log, Recording::Clock::now());
    rec.set_phase(grow);
    const AllocResult a = rec.allocate(4096, {});
    (void)rec.allocate(1_GiB, {});
    rec.deallocate(a.ptr, 4096, {});
    log.close();
  }
  io::CSVReader<12, io::trim_chars<>, io::double_quote_escape<',', '"'>> reader(path.string());
  reader.read_header(io::ignore_no_column, "seq", "t_ns", "step", "phase", "op", "bytes", "ptr",
                     "stream", "thread", "status", "live_bytes", "reserved_bytes");
  std::uint64_t seq = 0, t_ns = 0, step = 0, bytes = 0, thread = 0, live = 0, reserved = 0;
  std::string phase, op, ptr, stream, status;
  std::vector<std::string> ops;
  std::vector<std::string> statuses;
  while (reader.read_row(seq, t_ns, step, phase, op, bytes, ptr, stream, thread, status, live,
                         reserved)) {
    EXPECT_EQ(phase, "grow, then \"shrink\"");
    EXPECT_EQ(seq, ops.size());
    ops.push_back(op);
    statuses.push_back(status);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"alloc", "oom", "free"}));
  EXPECT_EQ(statuses, (std::vector<std::string>{"ok", "out_of_memory", "ok"}));
  std::filesystem::remove(path);
}

TEST(CsvFileSink, WritesEachFieldExactly) {
  const auto path = std::filesystem::temp_directory_path() / "oomlab_recorder_test_row.csv";
  PhaseTable phases;
  const std::uint32_t fill = phases.intern("fill");
  {
    CsvFileSink sink(path, phases);
    const std::array events = {
        Event{.t_ns = 1234,
              .bytes = 65536,
              .ptr = 0x7f00deadbe00,
              .stream = 0,
              .live_bytes = 18446744073709551615ULL,
              .reserved_bytes = 2097152,
              .step = 7,
              .phase = fill,
              .thread = 65535,
              .op = Op::alloc,
              .status = AllocStatus::ok},
        Event{.bytes = 1, .phase = 0, .op = Op::oom, .status = AllocStatus::budget_cap}};
    sink.write(41, events);
    sink.finish();
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string expected(kEventsCsvHeader);  // appended to: GCC 12 misreads header + "..." here
  expected +=
      "\n41,1234,7,fill,alloc,65536,0x7f00deadbe00,0x0,65535,ok,18446744073709551615,2097152\n"
      "42,0,0,,oom,1,0x0,0x0,0,budget_cap,0,0\n";
  EXPECT_EQ(text, expected);
  std::filesystem::remove(path);
}

TEST(CsvFileSink, RefusesAPathItCannotCreate) {
  PhaseTable phases;
  try {
    CsvFileSink sink("/proc/oomlab-cannot-be-here/events.csv", phases);
    FAIL() << "no folder can be made in /proc";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
  }
}

}  // namespace
}  // namespace oomlab

namespace oomlab {
namespace {

// Event times agree with steady_clock, whether they come from the TSC or not.
TEST(EventClock, KeepsTimeWithSteadyClock) {
  const auto start = EventClock::Steady::now();
  const EventClock clock(start);
  const std::uint64_t first = clock.now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const std::uint64_t event = clock.now_ns();
  const auto steady = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(EventClock::Steady::now() - start)
          .count());
  EXPECT_GE(event, 30'000'000U + first) << "reads_tsc=" << EventClock::reads_tsc();
  // Read one after the other: they differ by the time between the reads and the TSC's rate error.
  EXPECT_LE(event, steady + 50'000) << "the event clock runs fast";
  EXPECT_GE(event + 200'000, steady) << "the two clocks parted by more than 0.2 ms over 30 ms";
}

TEST(EventClock, NeverGoesBackwards) {
  const EventClock clock(EventClock::Steady::now());
  std::uint64_t last = clock.now_ns();
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t now = clock.now_ns();
    ASSERT_GE(now, last) << i;
    last = now;
  }
}

}  // namespace
}  // namespace oomlab
