// The allocator interface every backend implements and every adaptor wraps, RMM-style:
// a run drives Recording(BudgetCap(Managed(...))) or Recording(AsyncPool(...)) through this one
// interface, and a backend never knows it is being recorded or capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace oomlab {

// A CUDA stream as an opaque handle, so that plugin headers need no CUDA headers.
// The null handle is the legacy default stream (and the only stream of `sim`).
struct Stream {
  void* handle = nullptr;
  friend constexpr bool operator==(Stream, Stream) = default;
};

enum class AllocStatus : std::uint8_t {
  ok,
  out_of_memory,  // the allocator (the driver, the pool, the sim) could not serve it
  budget_cap,     // oomlab's own cap refused it before any CUDA call (managed memory)
  error,          // some other CUDA error: the run cannot go on
};

[[nodiscard]] constexpr bool is_oom(AllocStatus s) {
  return s == AllocStatus::out_of_memory || s == AllocStatus::budget_cap;
}

struct AllocResult {
  void* ptr = nullptr;
  AllocStatus status = AllocStatus::ok;
  int error_code = 0;  // the cudaError_t value when a CUDA call failed, else 0

  [[nodiscard]] bool ok() const { return status == AllocStatus::ok; }
};

// What a caching allocator in front of the device says of itself, as PyTorch's OOM message does.
struct CacheState {
  std::uint64_t allocated_bytes = 0;       // handed out to the program, in whole blocks
  std::uint64_t reserved_bytes = 0;        // held from the device
  std::uint64_t failed_device_bytes = 0;   // what the last failed request asked the device for
  std::uint64_t failed_request_bytes = 0;  // that request as the allocator rounded it
  std::uint64_t allowed_bytes = 0;         // set_per_process_memory_fraction's cap; 0: none
  bool async_backend = false;              // PyTorch's cudaMallocAsync backend, not its cache
};

// What the allocator holds and what the device still has. Live bytes (what the program asked
// for) are not here: the recording adaptor counts them, since only it sees every request.
struct MemoryState {
  std::uint64_t reserved_bytes = 0;     // held from the device for the live blocks
  std::uint64_t own_bytes_bound = 0;    // at most this much device memory is this allocator's
  std::uint64_t device_free_bytes = 0;  // what the device (or the sim) can still hand out
  std::uint64_t device_total_bytes = 0;
  std::uint64_t used_bytes = 0;  // what the allocator counts as in use (pools: UsedMemCurrent)
  std::uint64_t cap_bytes = 0;   // oomlab's own cap (BudgetCap); 0 when there is none
  std::uint64_t cap_charged_bytes = 0;  // what the cap counts against it
  std::optional<CacheState> cache;      // a caching allocator (torch); none otherwise
};

// Blocks that were live before a run began (a replayed program's weights, loaded before its
// trace was recorded), with the segment each sat in as a caching allocator held them, so that a
// model of that allocator can rebuild its state. `bytes` of a block is what was asked for.
struct PlacedBlock {
  std::uint64_t offset = 0;  // from the segment's start
  std::uint64_t bytes = 0;
  std::uint64_t block_bytes = 0;  // the allocator's block, when known (0: from its rules)
};
struct PlacedSegment {
  std::uint64_t address = 0;  // where it was: the mapped ranges of one expandable segment
                              // keep their distances
  std::uint64_t bytes = 0;    // the segment (or, expandable, the mapped range)
  Stream stream;
  bool small_pool = false;  // PyTorch's pool of requests up to 1 MiB
  bool expandable = false;
  std::vector<PlacedBlock> blocks;  // the live ones, by offset
};

// What a caching allocator asked the device for, as PyTorch's memory snapshot names it.
enum class DeviceCallKind : std::uint8_t {
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap
};
struct DeviceCall {
  DeviceCallKind kind = DeviceCallKind::segment_alloc;
  std::uint64_t bytes = 0;
  std::uint64_t address = 0;
};

class Allocator {
 public:
  Allocator() = default;
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&&) = delete;
  Allocator& operator=(Allocator&&) = delete;

  [[nodiscard]] virtual std::string_view name() const = 0;

  // Never throws on OOM: the status says it.
  virtual AllocResult allocate(std::size_t bytes, Stream stream) = 0;
  // `bytes` must be what was asked for when `ptr` was allocated.
  virtual void deallocate(void* ptr, std::size_t bytes, Stream stream) = 0;

  // Measured now; may cost microseconds (cudaMemGetInfo).
  [[nodiscard]] virtual MemoryState state() const = 0;

  // Cheap enough to call on every event. Exact where the backend can know it cheaply (sim),
  // otherwise the last value the backend sampled; every backend's comment says which.
  [[nodiscard]] virtual std::uint64_t reserved_bytes() const = 0;

  // Allocates `bytes` and frees it at once, leaving the allocator as it found it (a pool gives
  // back what the probe made it reserve). Used to find the largest block still available.
  virtual AllocStatus probe(std::size_t bytes, Stream stream) {
    const AllocResult r = allocate(bytes, stream);
    if (r.ok()) deallocate(r.ptr, bytes, stream);
    return r.status;
  }

  // Give cached memory back to the device (pools); waits until pending frees are done.
  virtual void trim() {}

  // The least memory a block of `bytes` takes from this allocator's capacity, however the
  // others lie: the request itself, or whole pages where the allocator hands out pages.
  [[nodiscard]] virtual std::uint64_t footprint(std::size_t bytes) const { return bytes; }

  // True when no device memory is involved (the sim), so every output can say so.
  [[nodiscard]] virtual bool simulated() const { return false; }

  // Allocates blocks that were live before the run began, in the segments a caching allocator
  // held them in: one result per block, in order. An allocator with no segments of its own
  // allocates each block alone (the default).
  virtual std::vector<AllocResult> allocate_placed(std::span<const PlacedSegment> segments) {
    std::vector<AllocResult> results;
    for (const PlacedSegment& segment : segments) {
      for (const PlacedBlock& block : segment.blocks)
        results.push_back(allocate(block.bytes, segment.stream));
    }
    return results;
  }

  // The calls a caching allocator made to the device so far, in order; null for an allocator
  // that keeps no such journal (one that is the device itself).
  [[nodiscard]] virtual const std::vector<DeviceCall>* device_calls() const { return nullptr; }
  // The segments a recorded run got from the device, in order, with the addresses the driver
  // gave them: a model of the allocator that made them may give its own segments those addresses
  // while it makes the same calls, since the allocator breaks ties between equal blocks by
  // address. Ignored by allocators that are the device.
  virtual void hint_device_calls(std::span<const DeviceCall> /*recorded*/) {}
};

}  // namespace oomlab
