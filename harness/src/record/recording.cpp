#include "record/recording.hpp"

namespace oomlab {

Recording::Recording(std::unique_ptr<Allocator> inner, EventLog& log, Clock::time_point start)
    : AllocatorAdaptor(std::move(inner)), log_(log), clock_(start) {
}

AllocResult Recording::do_allocate(std::size_t bytes, Stream stream) {
  const AllocResult result = upstream().allocate(bytes, stream);
  note_allocation(bytes, stream, result);
  return result;
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

void Recording::do_deallocate(void* ptr, std::size_t bytes, Stream stream) {
  upstream().deallocate(ptr, bytes, stream);
  add_live(-static_cast<std::int64_t>(bytes));
  --live_count_;
  ++frees_;
  emit(Op::free, bytes, ptr, stream, AllocStatus::ok);
}

AllocStatus Recording::do_probe(std::size_t bytes, Stream stream) {
  const AllocStatus status = upstream().probe(bytes, stream);
  emit(Op::probe, bytes, nullptr, stream, status);
  return status;
}

}  // namespace oomlab
