#include "record/recording.hpp"

namespace oomlab {

Recording::Recording(std::unique_ptr<Allocator> inner, EventLog& log, Clock::time_point start)
    : inner_(std::move(inner)), log_(log), clock_(start) {
}

AllocResult Recording::allocate(std::size_t bytes, Stream stream) {
  const AllocResult result = inner_->allocate(bytes, stream);
  if (result.ok()) {
    add_live(static_cast<std::int64_t>(bytes));
    ++live_count_;
    ++allocations_;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes());
    emit(Op::alloc, bytes, result.ptr, stream, result.status);
  } else {
    ++failed_;
    // An allocation that failed for another reason than memory is an alloc row with its status.
    emit(result.status == AllocStatus::error ? Op::alloc : Op::oom, bytes, nullptr, stream,
         result.status);
  }
  return result;
}

void Recording::deallocate(void* ptr, std::size_t bytes, Stream stream) {
  inner_->deallocate(ptr, bytes, stream);
  add_live(-static_cast<std::int64_t>(bytes));
  --live_count_;
  ++frees_;
  emit(Op::free, bytes, ptr, stream, AllocStatus::ok);
}

AllocStatus Recording::probe(std::size_t bytes, Stream stream) {
  const AllocStatus status = inner_->probe(bytes, stream);
  emit(Op::probe, bytes, nullptr, stream, status);
  return status;
}

}  // namespace oomlab
