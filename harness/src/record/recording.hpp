// Recording: wraps any allocator, writes each allocate, free and probe as an event, and keeps
// the run's account of live bytes (what the program asked for), their peaks and the counts.
// The backend underneath never knows it is being recorded.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

#include "oomlab/allocator.hpp"
#include "record/event_clock.hpp"
#include "record/event_log.hpp"

namespace oomlab {

class Recording final : public AllocatorAdaptor {
 public:
  using Clock = std::chrono::steady_clock;

  Recording(std::unique_ptr<Allocator> inner, EventLog& log, Clock::time_point start);

  // A mark event: a step boundary or a new phase.
  void mark() { emit(Op::mark, 0, nullptr, Stream{}, AllocStatus::ok); }
  void add_live(std::int64_t delta) {
    live_bytes_.store(live_bytes() + static_cast<std::uint64_t>(delta), std::memory_order_relaxed);
  }
  void set_step(std::uint64_t step) { step_.store(step, std::memory_order_relaxed); }
  void set_phase(std::uint32_t phase) { phase_.store(phase, std::memory_order_relaxed); }

  // Step and phase are readable from another thread (the progress line).
  [[nodiscard]] std::uint64_t step() const { return step_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint32_t phase() const { return phase_.load(std::memory_order_relaxed); }
  // Readable from another thread (the progress line) while the run goes on.
  [[nodiscard]] std::uint64_t live_bytes() const {
    return live_bytes_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t live_count() const { return live_count_; }
  [[nodiscard]] std::uint64_t peak_live_bytes() const { return peak_live_bytes_; }
  [[nodiscard]] std::uint64_t peak_reserved_bytes() const { return peak_reserved_bytes_; }
  [[nodiscard]] std::uint64_t allocations() const { return allocations_; }
  [[nodiscard]] std::uint64_t frees() const { return frees_; }
  [[nodiscard]] std::uint64_t failed() const { return failed_; }
  // The sequence number the next event will get.
  [[nodiscard]] std::uint64_t events() const { return log_.size(); }
  // Nanoseconds since the run's start, as events are stamped.
  [[nodiscard]] std::uint64_t now_ns() const { return clock_.now_ns(); }
  // events(), readable from another thread.
  [[nodiscard]] std::uint64_t events_seen() const {
    return events_seen_.load(std::memory_order_relaxed);
  }

  [[nodiscard]] Allocator& inner() { return upstream(); }

 private:
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  void note_allocation(std::size_t bytes, Stream stream, const AllocResult& result);
  void emit(Op op, std::uint64_t bytes, const void* ptr, Stream stream, AllocStatus status) {
    const std::uint64_t reserved = upstream().reserved_bytes();
    peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved);
    log_.append(Event{.t_ns = now_ns(),
                      .bytes = bytes,
                      .ptr = reinterpret_cast<std::uint64_t>(ptr),
                      .stream = reinterpret_cast<std::uint64_t>(stream.handle),
                      .live_bytes = live_bytes(),
                      .reserved_bytes = reserved,
                      .step = step(),
                      .phase = phase(),
                      .thread = current_thread_index(),
                      .op = op,
                      .status = status});
    events_seen_.store(events_seen_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  EventLog& log_;
  EventClock clock_;
  std::atomic<std::uint64_t> step_{0};
  std::atomic<std::uint32_t> phase_{0};
  // Atomic only so that the progress thread may read it; one thread writes (relaxed: plain moves).
  std::atomic<std::uint64_t> live_bytes_{0};
  std::uint64_t live_count_ = 0;
  std::uint64_t peak_live_bytes_ = 0;
  std::uint64_t peak_reserved_bytes_ = 0;
  std::uint64_t allocations_ = 0;
  std::uint64_t frees_ = 0;
  std::uint64_t failed_ = 0;
  std::atomic<std::uint64_t> events_seen_{0};
};

}  // namespace oomlab
