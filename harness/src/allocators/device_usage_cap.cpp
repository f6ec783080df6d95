#include "allocators/device_usage_cap.hpp"

#include <algorithm>

#include "oomlab/units.hpp"

namespace oomlab {

DeviceUsageCap::DeviceUsageCap(std::unique_ptr<Allocator> inner, std::uint64_t cap_bytes)
    : AllocatorAdaptor(std::move(inner)), cap_bytes_(cap_bytes) {
}

bool DeviceUsageCap::device_has_room_for(std::size_t bytes) const {
  usage_.read();
  const std::uint64_t pages = round_up(bytes, kDevicePageBytes);
  return pages <= cap_bytes_ && usage_.used_since_start() <= cap_bytes_ - pages;
}

AllocResult DeviceUsageCap::do_allocate(std::size_t bytes, Stream stream) {
  if (bytes != 0 && !device_has_room_for(bytes)) return {nullptr, AllocStatus::budget_cap, 0};
  return upstream().allocate(bytes, stream);
}

AllocStatus DeviceUsageCap::do_probe(std::size_t bytes, Stream stream) {
  if (bytes != 0 && !device_has_room_for(bytes)) return AllocStatus::budget_cap;
  return upstream().probe(bytes, stream);
}

MemoryState DeviceUsageCap::do_state() const {
  MemoryState s = upstream().state();
  s.cap_bytes = s.cap_bytes == 0 ? cap_bytes_ : std::min(s.cap_bytes, cap_bytes_);
  s.cap_charged_bytes = std::max(s.cap_charged_bytes, usage_.used_since_start());
  return s;
}

}  // namespace oomlab
