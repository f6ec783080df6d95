#include "jax/model/bfc_model.hpp"

#include <algorithm>
#include <bit>

#include "oomlab/error.hpp"

namespace oomlab::jax {

std::size_t bin_for(std::uint64_t bytes) {
  const std::uint64_t units = std::max(bytes, kMinAllocationBytes) >> 8;
  return std::min<std::size_t>(kBins - 1, static_cast<std::size_t>(std::bit_width(units) - 1));
}

BfcModel::BfcModel(const BfcConfig& config, RegionSource source)
    : config_(config),
      source_(std::move(source)),
      // Growth starts at 2 MiB (or the limit, if smaller); without it the first region is the
      // whole limit.
      next_region_bytes_(config.allow_growth
                             ? rounded_bytes(std::min(config.limit_bytes, kInitialGrowthRegion))
                             : rounded_bytes(config.limit_bytes)) {
  stats_.limit_bytes = config.limit_bytes;
}

BfcModel::~BfcModel() {
  if (!source_.give_back) return;
  for (const auto& [address, bytes] : regions_)
    source_.give_back(address, bytes);
}

std::optional<std::uint64_t> BfcModel::find(std::uint64_t rounded) const {
  for (std::size_t b = bin_for(rounded); b < kBins; ++b) {
    for (const auto& [size, address] : bins_[b]) {
      if (size >= rounded) return address;
    }
  }
  // Spatial partitioning: the gap only when no hole holds it.
  if (gap_ && chunks_.at(*gap_).size >= rounded) return gap_;
  return std::nullopt;
}

std::uint64_t BfcModel::take(std::uint64_t address, std::uint64_t rounded,
                             std::uint64_t requested) {
  remove_free(address);
  Chunk& chunk = chunks_.at(address);
  if (chunk.size >= rounded * 2 || chunk.size - rounded >= kMaxInternalFragmentation) {
    const std::uint64_t rest = address + rounded;
    chunks_.emplace(rest, Chunk{.size = chunk.size - rounded,
                                .region = chunk.region,
                                .in_use = false,
                                .tag = chunk.tag});
    chunk.size = rounded;
    insert_free(rest);
  }
  chunk.in_use = true;
  chunk.requested = requested;
  chunk.tag = Tag::lower;
  stats_.in_use_bytes += chunk.size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  ++stats_.allocations;
  return address;
}

bool BfcModel::extend(std::uint64_t rounded) {
  const std::uint64_t limit = config_.limit_bytes;
  const std::uint64_t available =
      limit > stats_.pool_bytes
          ? (limit - stats_.pool_bytes) / kMinAllocationBytes * kMinAllocationBytes
          : 0;
  if (rounded > available) return false;
  bool increased = false;
  while (rounded > next_region_bytes_) {
    next_region_bytes_ *= 2;
    increased = true;
  }
  std::uint64_t bytes = std::min(next_region_bytes_, available);
  std::optional<std::uint64_t> address = source_.take(bytes);
  while (!address) {
    // XLA's kBackpedalFactor is a float: the product is computed in single precision.
    const float less = static_cast<float>(bytes) * 0.9F;
    const std::uint64_t smaller = rounded_bytes(static_cast<std::uint64_t>(less));
    // Nine tenths of 2304 B round back up to 2304 B: XLA would ask a source that has nothing
    // for the same region without end; here it is refused.
    if (smaller < rounded || smaller >= bytes) return false;
    bytes = smaller;
    address = source_.take(bytes);
  }
  if (!increased) next_region_bytes_ *= 2;
  stats_.pool_bytes += bytes;
  regions_.emplace_back(*address, bytes);
  // A second gap cannot be (XLA would stop on a check): a later region is then binned.
  const Tag tag = config_.spatial && !gap_ ? Tag::gap : Tag::lower;
  chunks_.emplace(*address, Chunk{.size = bytes, .region = regions_.size() - 1, .tag = tag});
  insert_free(*address);
  return true;
}

std::optional<std::uint64_t> BfcModel::allocate(std::uint64_t bytes) {
  if (bytes > config_.limit_bytes) return std::nullopt;  // no chunk of the pool could hold it
  const std::uint64_t rounded = rounded_bytes(bytes);
  std::optional<std::uint64_t> found = find(rounded);
  if (!found && extend(rounded)) found = find(rounded);
  if (!found) return std::nullopt;
  return take(*found, rounded, bytes);
}

bool BfcModel::would_fit(std::uint64_t bytes) const {
  if (bytes > config_.limit_bytes) return false;
  const std::uint64_t rounded = rounded_bytes(bytes);
  if (find(rounded)) return true;
  const std::uint64_t limit = config_.limit_bytes;
  return limit > stats_.pool_bytes &&
         rounded <= (limit - stats_.pool_bytes) / kMinAllocationBytes * kMinAllocationBytes;
}

void BfcModel::free(std::uint64_t address) {
  auto it = chunks_.find(address);
  if (it == chunks_.end() || !it->second.in_use)
    throw Error(ErrorKind::internal, "xla: a free of an address the pool did not hand out");
  Chunk& chunk = it->second;
  chunk.in_use = false;
  stats_.in_use_bytes -= chunk.size;
  if (config_.spatial) {
    // A chunk at the region's end, or below the gap, goes back to the gap.
    const auto next = next_in_region(it);
    if (next == chunks_.end() || next->second.tag != Tag::lower) chunk.tag = Tag::gap;
  }
  std::uint64_t merged = address;
  if (const auto next = next_in_region(it); next != chunks_.end() && !next->second.in_use) {
    remove_free(next->first);
    merged = merge(address, next->first);
  }
  if (const auto prev = prev_in_region(chunks_.find(merged));
      prev != chunks_.end() && !prev->second.in_use) {
    remove_free(prev->first);
    merged = merge(prev->first, merged);
  }
  insert_free(merged);
}

std::uint64_t BfcModel::merge(std::uint64_t low, std::uint64_t high) {
  Chunk& a = chunks_.at(low);
  const Chunk& b = chunks_.at(high);
  a.size += b.size;
  if (a.tag != b.tag) a.tag = Tag::gap;  // a hole joined to the gap is the gap
  chunks_.erase(high);
  return low;
}

void BfcModel::insert_free(std::uint64_t address) {
  const Chunk& chunk = chunks_.at(address);
  if (chunk.tag == Tag::gap) {
    gap_ = address;
    return;
  }
  bins_[bin_for(chunk.size)].emplace(chunk.size, address);
}

void BfcModel::remove_free(std::uint64_t address) {
  if (gap_ == address) {
    gap_.reset();
    return;
  }
  const Chunk& chunk = chunks_.at(address);
  bins_[bin_for(chunk.size)].erase({chunk.size, address});
}

BfcModel::Chunks::iterator BfcModel::next_in_region(Chunks::iterator it) {
  const auto next = std::next(it);
  if (next == chunks_.end() || next->second.region != it->second.region) return chunks_.end();
  return next;
}

BfcModel::Chunks::iterator BfcModel::prev_in_region(Chunks::iterator it) {
  if (it == chunks_.begin()) return chunks_.end();
  const auto prev = std::prev(it);
  if (prev->second.region != it->second.region) return chunks_.end();
  return prev;
}

BfcStats BfcModel::stats() const {
  BfcStats out = stats_;
  for (const auto& bin : bins_) {
    for (const auto& [size, address] : bin) {
      out.free_bytes += size;
      out.largest_free_bytes = std::max(out.largest_free_bytes, size);
    }
  }
  if (gap_) {
    const std::uint64_t size = chunks_.at(*gap_).size;
    out.free_bytes += size;
    out.largest_free_bytes = std::max(out.largest_free_bytes, size);
  }
  return out;
}

}  // namespace oomlab::jax
