// A model of XLA's BFC ("best-fit with coalescing") allocator, the pool JAX's GPU client gives
// every buffer from (GPU_0_bfc), with the rules of its source (xla/tsl/framework/bfc_allocator.cc,
// as JAX 0.11 builds it):
// - requests rounded up to 256 bytes; free chunks in 21 bins by size (256 << b up to 256 MiB and
//   over), each ordered by (size, address): the smallest free chunk that holds the request, the
//   lowest address on a tie;
// - a chunk split when it is at least twice the request or 128 MiB larger, the low part handed
//   out; a freed chunk merged with the next, then the previous chunk of its region (regions never
//   merge);
// - the pool grows by regions up to its limit: the whole limit at the first request when
//   preallocated (JAX's default), else 2 MiB, doubling after each region, or doubled until a
//   larger request fits (then not again); a refused region asked again at 0.9 of its size
//   (computed in single precision, as XLA does) until it would not hold the request;
// - spatial partitioning (XLA's default with preallocation): what no chunk was ever cut from is
//   one free "central gap", unbinned; a request takes the best binned hole first and cuts from
//   the gap's low end only when no hole holds it; a freed chunk next to the gap joins it.
// No garbage collection of free regions (JAX's client leaves it off).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace oomlab::jax {

inline constexpr std::uint64_t kMinAllocationBytes = 256;
inline constexpr std::size_t kBins = 21;
inline constexpr std::uint64_t kMaxInternalFragmentation = std::uint64_t{128} << 20;
inline constexpr std::uint64_t kInitialGrowthRegion = std::uint64_t{2} << 20;

struct BfcConfig {
  std::uint64_t limit_bytes = 0;  // the pool's limit (memory_fraction of the card, 2 MiB rounded)
  bool allow_growth = false;      // XLA_PYTHON_CLIENT_PREALLOCATE=false
  bool spatial = true;            // the central gap (with preallocation, XLA's default)
};

// Where the pool's regions come from: an address, or none when refused.
struct RegionSource {
  std::function<std::optional<std::uint64_t>(std::uint64_t bytes)> take;
  std::function<void(std::uint64_t address, std::uint64_t bytes)> give_back;
};

struct BfcStats {
  std::uint64_t in_use_bytes = 0;  // chunk sizes, as XLA counts bytes_in_use
  std::uint64_t peak_in_use_bytes = 0;
  std::uint64_t pool_bytes = 0;  // regions taken
  std::uint64_t limit_bytes = 0;
  std::uint64_t free_bytes = 0;          // free chunks in the pool, the gap included
  std::uint64_t largest_free_bytes = 0;  // the largest free chunk (or the gap)
  std::uint64_t allocations = 0;
};

[[nodiscard]] constexpr std::uint64_t rounded_bytes(std::uint64_t bytes) {
  const std::uint64_t r = (bytes + kMinAllocationBytes - 1) / kMinAllocationBytes;
  return std::max<std::uint64_t>(r, 1) * kMinAllocationBytes;
}
[[nodiscard]] std::size_t bin_for(std::uint64_t bytes);

class BfcModel {
 public:
  BfcModel(const BfcConfig& config, RegionSource source);
  ~BfcModel();  // the regions given back
  BfcModel(const BfcModel&) = delete;
  BfcModel& operator=(const BfcModel&) = delete;
  BfcModel(BfcModel&&) = delete;
  BfcModel& operator=(BfcModel&&) = delete;

  // The chunk's address, or none when the pool cannot hold it (XLA's RESOURCE_EXHAUSTED).
  [[nodiscard]] std::optional<std::uint64_t> allocate(std::uint64_t bytes);
  void free(std::uint64_t address);  // an address allocate() gave
  // Whether allocate(bytes) would be served, without changing anything (growth counted on the
  // limit alone: whether the source would give the region is not asked).
  [[nodiscard]] bool would_fit(std::uint64_t bytes) const;
  // Whether a free chunk of the pool holds it now, with no region grown.
  [[nodiscard]] bool holds_free(std::uint64_t bytes) const {
    return find(rounded_bytes(bytes)).has_value();
  }
  [[nodiscard]] BfcStats stats() const;  // free figures counted over the free chunks
  [[nodiscard]] std::uint64_t pool_bytes() const { return stats_.pool_bytes; }
  [[nodiscard]] const BfcConfig& config() const { return config_; }

 private:
  enum class Tag : std::uint8_t { lower, gap };
  struct Chunk {
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::size_t region = 0;
    bool in_use = false;
    Tag tag = Tag::lower;
  };
  using Chunks = std::map<std::uint64_t, Chunk>;  // by address

  [[nodiscard]] std::optional<std::uint64_t> find(std::uint64_t rounded) const;
  std::uint64_t take(std::uint64_t address, std::uint64_t rounded, std::uint64_t requested);
  bool extend(std::uint64_t rounded);
  void insert_free(std::uint64_t address);
  void remove_free(std::uint64_t address);
  [[nodiscard]] Chunks::iterator next_in_region(Chunks::iterator it);
  [[nodiscard]] Chunks::iterator prev_in_region(Chunks::iterator it);
  std::uint64_t merge(std::uint64_t low, std::uint64_t high);

  BfcConfig config_;
  RegionSource source_;
  Chunks chunks_;
  std::array<std::set<std::pair<std::uint64_t, std::uint64_t>>, kBins> bins_;  // (size, address)
  std::optional<std::uint64_t> gap_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions_;  // (address, bytes)
  std::uint64_t next_region_bytes_;
  BfcStats stats_;
};

}  // namespace oomlab::jax
