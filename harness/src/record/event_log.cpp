#include "record/event_log.hpp"

#include <atomic>
#include <stdexcept>

namespace oomlab {

std::uint16_t assign_thread_index() {
  static std::atomic<std::uint16_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

EventLog::EventLog(std::unique_ptr<EventSink> sink) : sink_(std::move(sink)) {
  for (std::size_t i = 0; i < kSpareChunks; ++i)
    spare_.push_back(std::make_unique<Chunk>(kChunkEvents));
  chunks_made_ = kSpareChunks + 1;
  start_chunk(std::make_unique<Chunk>(kChunkEvents));
  writer_ = std::thread([this] { writer_loop(); });
}

EventLog::~EventLog() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the owner calls close() to see sink errors
  }
}

void EventLog::start_chunk(std::unique_ptr<Chunk> chunk) {
  current_ = std::move(chunk);
  begin_ = current_->data();
  next_ = begin_;
  end_ = begin_ + current_->size();
}

void EventLog::hand_off() {
  if (closed_) throw std::logic_error("event appended to a closed log");
  std::unique_ptr<Chunk> next;
  {
    std::unique_lock lock(mutex_);
    const auto count = static_cast<std::size_t>(next_ - begin_);
    pending_.push_back({std::move(current_), count, written_before_current_});
    written_before_current_ += count;
    work_ready_.notify_one();
    // Spares are made ahead by the writer; none left means it is kMaxChunks behind: wait.
    chunk_free_.wait(lock, [&] { return !spare_.empty(); });
    next = std::move(spare_.back());
    spare_.pop_back();
  }
  start_chunk(std::move(next));
}

void EventLog::make_spares() {
  for (;;) {
    {
      const std::lock_guard lock(mutex_);
      if (spare_.size() >= kSpareChunks || chunks_made_ >= kMaxChunks) return;
      ++chunks_made_;
    }
    auto chunk = std::make_unique<Chunk>(kChunkEvents);  // off the hot path, outside the lock
    const std::lock_guard lock(mutex_);
    spare_.push_back(std::move(chunk));
    chunk_free_.notify_one();
  }
}

void EventLog::writer_loop() {
  for (;;) {
    make_spares();
    Pending job;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return !pending_.empty() || closing_; });
      if (pending_.empty()) return;
      job = std::move(pending_.front());
      pending_.pop_front();
    }
    bool failed = false;
    {
      const std::lock_guard lock(mutex_);
      failed = sink_error_ != nullptr;
    }
    if (!failed) {
      try {
        sink_->write(job.first_seq, std::span<const Event>(job.chunk->data(), job.count));
      } catch (...) {
        const std::lock_guard lock(mutex_);
        sink_error_ = std::current_exception();  // later chunks are dropped; close() reports it
      }
    }
    const std::lock_guard lock(mutex_);
    spare_.push_back(std::move(job.chunk));
    chunk_free_.notify_one();
  }
}

void EventLog::close() {
  if (closed_) return;
  closed_ = true;
  {
    const std::lock_guard lock(mutex_);
    const auto count = static_cast<std::size_t>(next_ - begin_);
    if (count > 0) pending_.push_back({std::move(current_), count, written_before_current_});
    written_before_current_ += count;
    closing_ = true;
    work_ready_.notify_one();
  }
  writer_.join();
  begin_ = next_ = end_ = nullptr;
  if (sink_error_ == nullptr) {
    try {
      sink_->finish();
    } catch (...) {
      sink_error_ = std::current_exception();
    }
  }
  if (sink_error_ != nullptr) std::rethrow_exception(sink_error_);
}

}  // namespace oomlab
