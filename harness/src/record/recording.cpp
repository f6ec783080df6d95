#include "record/recording.hpp"

namespace oomlab {

Recording::Recording(std::unique_ptr<Allocator> inner, EventLog& log, Clock::time_point start)
    : inner_(std::move(inner)), log_(log), clock_(start) {
}

AllocResult Recording::allocate(std::size_t bytes, Stream stream) {
  const AllocResult result = inner_->allocate(bytes, stream);
  note_allocation(bytes, stream, result);
  return result;
}

std::vector<AllocResult> Recording::allocate_placed(std::span<const PlacedSegment> segments) {
  std::vector<AllocResult> results = inner_->allocate_placed(segments);
  std::size_t i = 0;
  for (const PlacedSegment& segment : segments) {
    for (const PlacedBlock& block : segment.blocks) {
      if (i < results.size()) note_allocation(block.bytes, segment.stream, results[i++]);
    }
  }
  return results;
}

void Recording::note_allocation(std::size_t bytes, Stream stream, const AllocResult& result) {
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
