// The allocator interface every backend implements and every adaptor wraps, RMM-style:
// a run drives Recording(BudgetCap(Managed(...))) or Recording(AsyncPool(...)) through this one
// interface, and a backend never knows it is being recorded or capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

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
};

// The interface is RMM's shape: public calls that are not virtual, each over one private virtual
// (do_*) that a backend or an adaptor overrides. What only some allocators can do (a model of
// PyTorch's cache journals its device calls) is a capability: a separate interface that
// capability<T>() finds, null when the allocator has none, and that every adaptor forwards from
// its upstream (AllocatorAdaptor), so that wrapping never hides it.
class Allocator {
 public:
  Allocator() = default;
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&&) = delete;
  Allocator& operator=(Allocator&&) = delete;

  [[nodiscard]] std::string_view name() const { return do_name(); }

  // Never throws on OOM: the status says it.
  AllocResult allocate(std::size_t bytes, Stream stream) { return do_allocate(bytes, stream); }
  // `bytes` must be what was asked for when `ptr` was allocated.
  void deallocate(void* ptr, std::size_t bytes, Stream stream) {
    do_deallocate(ptr, bytes, stream);
  }

  // Measured now; may cost microseconds (cudaMemGetInfo).
  [[nodiscard]] MemoryState state() const { return do_state(); }

  // Cheap enough to call on every event. Exact where the backend can know it cheaply (sim),
  // otherwise the last value the backend sampled; every backend's comment says which.
  [[nodiscard]] std::uint64_t reserved_bytes() const { return do_reserved_bytes(); }

  // Allocates `bytes` and frees it at once, leaving the allocator as it found it (a pool gives
  // back what the probe made it reserve). Used to find the largest block still available.
  AllocStatus probe(std::size_t bytes, Stream stream) { return do_probe(bytes, stream); }

  // Give cached memory back to the device (pools); waits until pending frees are done.
  void trim() { do_trim(); }

  // The least memory a block of `bytes` takes from this allocator's capacity, however the
  // others lie: the request itself, or whole pages where the allocator hands out pages.
  [[nodiscard]] std::uint64_t footprint(std::size_t bytes) const { return do_footprint(bytes); }

  // True when no device memory is involved (the sim), so every output can say so.
  [[nodiscard]] bool simulated() const { return do_simulated(); }

  // The capability T (an interface with `static constexpr std::string_view kCapability`) of this
  // allocator or of the one it wraps; null when it has none.
  template <typename T>
  [[nodiscard]] T* capability() {
    return static_cast<T*>(find_capability(T::kCapability));
  }
  template <typename T>
  [[nodiscard]] const T* capability() const {
    return static_cast<const T*>(const_cast<Allocator*>(this)->find_capability(T::kCapability));
  }
  // The untyped lookup capability<T>() makes, for an adaptor to forward.
  [[nodiscard]] void* find_capability(std::string_view id) { return do_capability(id); }

 private:
  [[nodiscard]] virtual std::string_view do_name() const = 0;
  virtual AllocResult do_allocate(std::size_t bytes, Stream stream) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, Stream stream) = 0;
  [[nodiscard]] virtual MemoryState do_state() const = 0;
  [[nodiscard]] virtual std::uint64_t do_reserved_bytes() const = 0;
  virtual AllocStatus do_probe(std::size_t bytes, Stream stream) {
    const AllocResult r = allocate(bytes, stream);
    if (r.ok()) deallocate(r.ptr, bytes, stream);
    return r.status;
  }
  virtual void do_trim() {}
  [[nodiscard]] virtual std::uint64_t do_footprint(std::size_t bytes) const { return bytes; }
  [[nodiscard]] virtual bool do_simulated() const { return false; }
  [[nodiscard]] virtual void* do_capability(std::string_view /*id*/) { return nullptr; }
};

// An adaptor (RMM's resource adaptor): owns its upstream and forwards every call to it,
// capabilities included; a subclass overrides only what it changes. An adaptor that changes
// do_allocate applies the same rule in do_probe, or a probe would let a request past it.
class AllocatorAdaptor : public Allocator {
 public:
  explicit AllocatorAdaptor(std::unique_ptr<Allocator> upstream) : upstream_(std::move(upstream)) {}

  [[nodiscard]] Allocator& upstream() { return *upstream_; }
  [[nodiscard]] const Allocator& upstream() const { return *upstream_; }

 private:
  [[nodiscard]] std::string_view do_name() const override { return upstream_->name(); }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override {
    return upstream_->allocate(bytes, stream);
  }
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override {
    upstream_->deallocate(ptr, bytes, stream);
  }
  [[nodiscard]] MemoryState do_state() const override { return upstream_->state(); }
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return upstream_->reserved_bytes();
  }
  AllocStatus do_probe(std::size_t bytes, Stream stream) override {
    return upstream_->probe(bytes, stream);
  }
  void do_trim() override { upstream_->trim(); }
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override {
    return upstream_->footprint(bytes);
  }
  [[nodiscard]] bool do_simulated() const override { return upstream_->simulated(); }
  [[nodiscard]] void* do_capability(std::string_view id) override {
    return upstream_->find_capability(id);
  }

  std::unique_ptr<Allocator> upstream_;
};

}  // namespace oomlab
