#include "run/integrity.hpp"

namespace oomlab {

std::string_view to_string(VerifyMode mode) {
  switch (mode) {
    case VerifyMode::off:
      return "off";
    case VerifyMode::sample:
      return "sample";
    case VerifyMode::all:
      return "all";
  }
  return "?";
}

bool Integrity::fill_new(void* ptr, std::size_t bytes) {
  if (!active() || ptr == nullptr) return false;
  const bool selected =
      mode_ == VerifyMode::all || allocations_seen_++ % kSampleEvery == 0 || bytes >= kAlwaysBytes;
  if (selected) kernels::fill(ptr, bytes, seed_, stream_);
  return selected;
}

void Integrity::fill(void* ptr, std::size_t bytes) {
  if (counter_ != nullptr && ptr != nullptr) kernels::fill(ptr, bytes, seed_, stream_);
}

std::uint64_t Integrity::verify(const void* ptr, std::size_t bytes) {
  if (counter_ == nullptr || ptr == nullptr) return 0;
  const std::uint64_t mismatches = counter_->verify(ptr, bytes, seed_, stream_);
  ++checked_;
  if (mismatches != 0) {
    ++corrupted_;
    corrupted_words_ += mismatches;
  }
  return mismatches;
}

void Integrity::verify_live(const LiveBlocks& blocks) {
  if (counter_ == nullptr) return;
  blocks.for_each_live([&](const LiveBlocks::Entry& e) {
    if (e.filled) (void)verify(e.ptr, e.bytes);
  });
}

}  // namespace oomlab
