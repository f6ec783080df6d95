// An adaptor that reads the time inside its upstream's allocate and deallocate calls, for the
// benchmarks that split a loop's time into the driver calls' and everything else's
// (fill_hypothesis/g_in_call, BM_ReplayInCallSplitOnAsync).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "oomlab/allocator.hpp"
#include "record/event_clock.hpp"

namespace oomlab::bench {

class InCallTimer final : public AllocatorAdaptor {
 public:
  // Adds the nanoseconds spent inside the calls to `inside_ns`.
  InCallTimer(std::unique_ptr<Allocator> upstream, std::uint64_t& inside_ns)
      : AllocatorAdaptor(std::move(upstream)),
        clock_(std::chrono::steady_clock::now()),
        inside_ns_(inside_ns) {}

 private:
  AllocResult do_allocate(std::size_t bytes, Stream stream) override {
    const std::uint64_t before = clock_.now_ns();
    const AllocResult r = upstream().allocate(bytes, stream);
    inside_ns_ += clock_.now_ns() - before;
    return r;
  }
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override {
    const std::uint64_t before = clock_.now_ns();
    upstream().deallocate(ptr, bytes, stream);
    inside_ns_ += clock_.now_ns() - before;
  }

  EventClock clock_;
  std::uint64_t& inside_ns_;
};

}  // namespace oomlab::bench
