// The run's events: appended into preallocated chunks of kChunkEvents; a full chunk goes to a
// writer thread that hands it to the sink (events.csv) and returns it for reuse. The writer also
// keeps kSpareChunks spare chunks made ahead, so the appending thread never allocates and never
// does I/O; it waits only when the writer is kMaxChunks behind. Host memory stays bounded
// (kMaxChunks chunks of 1 MiB) however long the run is.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "record/event.hpp"

namespace oomlab {

// Where full chunks of events go (events.csv, memory for tests, nowhere); called on the log's
// writer thread, in order.
class EventSink {
 public:
  EventSink() = default;
  virtual ~EventSink() = default;
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;
  EventSink(EventSink&&) = delete;
  EventSink& operator=(EventSink&&) = delete;

  // Events in order; `first_seq` is the sequence number of events[0]. Called on one thread.
  virtual void write(std::uint64_t first_seq, std::span<const Event> events) = 0;
  virtual void finish() {}
};

// Keeps nothing (benchmarks, runs without an event file).
class NullSink final : public EventSink {
 public:
  void write(std::uint64_t /*first_seq*/, std::span<const Event> /*events*/) override {}
};

class EventLog {
 public:
  static constexpr std::size_t kChunkEvents = 16384;  // 1 MiB
  static constexpr std::size_t kMaxChunks = 64;       // 64 MiB at most in flight
  static constexpr std::size_t kSpareChunks = 4;      // made ahead by the writer

  explicit EventLog(std::unique_ptr<EventSink> sink);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  EventLog(EventLog&&) = delete;
  EventLog& operator=(EventLog&&) = delete;

  void append(const Event& event) {
    if (next_ == end_) [[unlikely]]
      hand_off();
    *next_++ = event;
  }

  // Chunks in existence (in use, waiting for the writer, or spare): at most kMaxChunks.
  [[nodiscard]] std::size_t chunks_made() const {
    const std::lock_guard lock(mutex_);
    return chunks_made_;
  }

  // The last events appended (up to `count`, fewer right after a chunk went to the writer), with
  // the sequence number of the first; on the appending thread only.
  [[nodiscard]] std::pair<std::uint64_t, std::span<const Event>> tail(std::size_t count) const {
    const auto have = static_cast<std::size_t>(next_ - begin_);
    const std::size_t n = std::min(have, count);
    return {size() - n, std::span<const Event>(next_ - n, n)};
  }

  // Events appended so far (the next event's sequence number).
  [[nodiscard]] std::uint64_t size() const { return written_before_current_ + (next_ - begin_); }

  // Hands everything to the sink, waits until it is written, and calls the sink's finish().
  // Rethrows what the sink threw (a full disk, say). The log takes no events after this.
  void close();

 private:
  using Chunk = std::vector<Event>;
  struct Pending {
    std::unique_ptr<Chunk> chunk;
    std::size_t count;
    std::uint64_t first_seq;
  };

  void hand_off();
  void start_chunk(std::unique_ptr<Chunk> chunk);
  void writer_loop();
  void make_spares();  // on the writer thread

  std::unique_ptr<EventSink> sink_;
  std::unique_ptr<Chunk> current_;
  Event* begin_ = nullptr;
  Event* next_ = nullptr;
  Event* end_ = nullptr;
  std::uint64_t written_before_current_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable chunk_free_;
  std::deque<Pending> pending_;
  std::vector<std::unique_ptr<Chunk>> spare_;
  std::size_t chunks_made_ = 0;
  bool closing_ = false;
  bool closed_ = false;
  std::exception_ptr sink_error_;
  std::thread writer_;
};

}  // namespace oomlab
