// A model of one of PyTorch's CUDA allocator backends, driven request by request: the native
// caching allocator (caching_model.hpp) or the cudaMallocAsync backend (async_model.hpp). Both
// ask a DeviceMemory for what they hold and journal every device call, so that a replay can
// compare them with the segment calls a snapshot recorded.
#pragma once

#include <cstdint>
#include <vector>

#include "oomlab/caching_allocator.hpp"
#include "pytorch/model/device_memory.hpp"

namespace oomlab::torch {

// The models key pools by the stream's handle, as PyTorch orders its blocks.
[[nodiscard]] inline std::uint64_t stream_key(Stream stream) {
  return reinterpret_cast<std::uint64_t>(stream.handle);
}

struct CacheStats {
  std::uint64_t allocated_bytes = 0;  // block sizes handed out (PyTorch's allocated_bytes)
  std::uint64_t requested_bytes = 0;  // what the program asked for, of those
  std::uint64_t reserved_bytes = 0;   // held from the device: segments, mapped pages, chunks
  std::uint64_t peak_reserved_bytes = 0;
  // The last failed request: what it asked the device for ("Tried to allocate ...").
  std::uint64_t failed_device_bytes = 0;
  std::uint64_t failed_request_bytes = 0;  // the same request, rounded as PyTorch rounds it
  std::uint64_t ooms = 0;
  std::uint64_t alloc_retries = 0;  // device requests that failed and were retried after a release
};

class CacheModel {
 public:
  CacheModel() = default;
  virtual ~CacheModel() = default;
  CacheModel(const CacheModel&) = delete;
  CacheModel& operator=(const CacheModel&) = delete;
  CacheModel(CacheModel&&) = delete;
  CacheModel& operator=(CacheModel&&) = delete;

  // The block's address, or 0 when PyTorch would raise OutOfMemoryError.
  virtual std::uint64_t malloc(std::uint64_t bytes, std::uint64_t stream) = 0;
  // The block returns to the cache (PyTorch's free_completed).
  virtual void free(std::uint64_t address) = 0;
  // torch.cuda.empty_cache(): every cached segment that holds no live block goes back.
  virtual void empty_cache() = 0;
  // Whether malloc(bytes) would succeed now, releasing what it may; changes nothing.
  [[nodiscard]] virtual bool would_fit(std::uint64_t bytes, std::uint64_t stream) const = 0;
  // Rebuilds the segments that held live blocks before the run began: the addresses of their
  // live blocks, in order, 0 for each that the device had no room for.
  virtual std::vector<std::uint64_t> place(std::span<const PlacedSegment> segments) = 0;

  [[nodiscard]] virtual CacheStats stats() const = 0;
  [[nodiscard]] const std::vector<DeviceCall>& calls() const { return calls_; }

 protected:
  void journal(DeviceCallKind kind, std::uint64_t bytes, std::uint64_t address) {
    if (journaling_) calls_.push_back({kind, bytes, address});
  }
  // Placing what existed before the run is not a call the run made.
  struct Unjournaled {
    explicit Unjournaled(CacheModel& m) : model(m) { model.journaling_ = false; }
    ~Unjournaled() { model.journaling_ = true; }
    Unjournaled(const Unjournaled&) = delete;
    Unjournaled& operator=(const Unjournaled&) = delete;
    Unjournaled(Unjournaled&&) = delete;
    Unjournaled& operator=(Unjournaled&&) = delete;
    CacheModel& model;
  };

 private:
  std::vector<DeviceCall> calls_;
  bool journaling_ = true;
};

}  // namespace oomlab::torch
