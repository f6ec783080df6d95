#include <algorithm>
#include <bit>
#include <cstring>

#include "oomlab/trace_events.hpp"

namespace oomlab::trace {

namespace {

static_assert(std::endian::native == std::endian::little, "columns are read as little-endian");

// kNone is 0, anything else one more: a column of "none" is all one value.
std::uint64_t or_none(std::uint32_t v) {
  return v == Event::kNone ? 0 : std::uint64_t{v} + 1;
}
std::uint32_t from_or_none(std::uint64_t v) {
  return v == 0 ? Event::kNone : static_cast<std::uint32_t>(v - 1);
}

std::uint64_t flag_bits(const Event& e) {
  return static_cast<std::uint64_t>(e.op) | (e.preexisting ? 4U : 0U) | (e.refusable ? 8U : 0U);
}

}  // namespace

void EventStore::push_back(const Event& e) {
  if (tail_.size() == kChunk) pack_tail();
  if (tail_.capacity() < kChunk) tail_.reserve(kChunk);
  tail_.push_back(e);
}

void EventStore::pack_tail() {
  const std::size_t n = tail_.size();
  Chunk chunk;
  std::size_t size = 0;
  for (std::size_t c = 0; c < kColumns; ++c) {
    const auto column = static_cast<Column>(c);
    std::uint64_t lo = UINT64_MAX;
    std::uint64_t hi = 0;
    for (const Event& e : tail_) {
      const std::uint64_t v = value(e, column);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    chunk.base[c] = lo;
    chunk.width[c] = static_cast<std::uint8_t>((std::bit_width(hi - lo) + 7) / 8);
    chunk.offset[c] = static_cast<std::uint32_t>(size);
    size += n * chunk.width[c];
  }
  chunk.data.resize(size + sizeof(std::uint64_t));
  for (std::size_t c = 0; c < kColumns; ++c) {
    const std::size_t w = chunk.width[c];
    if (w == 0) continue;
    std::uint8_t* out = chunk.data.data() + chunk.offset[c];
    for (const Event& e : tail_) {
      const std::uint64_t offset = value(e, static_cast<Column>(c)) - chunk.base[c];
      std::memcpy(out, &offset, w);  // its low bytes: little-endian
      out += w;
    }
  }
  chunks_.push_back(std::move(chunk));
  packed_ += n;
  tail_.clear();
}

std::uint64_t EventStore::value(const Event& e, Column column) {
  switch (column) {
    case bytes:
      return e.bytes;
    case t_ns:
      return e.t_ns;
    case index:
      return e.index;
    case line:
      return e.line;
    case slot:
      return or_none(e.slot);
    case stream:
      return e.stream;
    case flags:
      return flag_bits(e);
  }
  return 0;
}

// One column of a chunk, read without a branch: a column of width 0 reads its slack, masked off.
struct EventStore::ColumnView {
  const std::uint8_t* at = nullptr;
  std::size_t width = 0;
  std::uint64_t mask = 0;
  std::uint64_t base = 0;

  ColumnView(const Chunk& c, Column column)
      : at(c.data.data() + c.offset[column]),
        width(c.width[column]),
        mask(width == 8 ? UINT64_MAX : (std::uint64_t{1} << (8 * width)) - 1),
        base(c.base[column]) {}
  [[nodiscard]] std::uint64_t operator[](std::size_t j) const {
    std::uint64_t v = 0;
    std::memcpy(&v, at + j * width, sizeof v);  // 8 bytes of slack after the last column
    return base + (v & mask);
  }
};

Event EventStore::decode(const std::array<ColumnView, kColumns>& c, std::size_t j) {
  const std::uint64_t f = c[flags][j];
  return Event{.bytes = c[bytes][j],
               .t_ns = c[t_ns][j],
               .index = c[index][j],
               .line = c[line][j],
               .slot = from_or_none(c[slot][j]),
               .stream = static_cast<std::uint32_t>(c[stream][j]),
               .op = static_cast<Op>(f & 3U),
               .preexisting = (f & 4U) != 0,
               .refusable = (f & 8U) != 0};
}

std::array<EventStore::ColumnView, EventStore::kColumns> EventStore::columns(const Chunk& c) {
  return {ColumnView(c, bytes), ColumnView(c, t_ns),   ColumnView(c, index), ColumnView(c, line),
          ColumnView(c, slot),  ColumnView(c, stream), ColumnView(c, flags)};
}

Event EventStore::operator[](std::size_t i) const {
  if (i >= packed_) return tail_[i - packed_];
  return decode(columns(chunks_[i >> kChunkBits]), i & (kChunk - 1));
}

void EventStore::unpack(std::size_t chunk, std::vector<Event>& out) const {
  if (chunk >= chunks_.size()) {  // the tail
    out.assign(tail_.begin(), tail_.end());
    return;
  }
  const std::array<ColumnView, kColumns> c = columns(chunks_[chunk]);
  const std::size_t n = std::min(kChunk, packed_ - chunk * kChunk);
  out.resize(n);
  for (std::size_t j = 0; j < n; ++j)
    out[j] = decode(c, j);
}

std::size_t EventStore::bytes_held() const {
  std::size_t held = chunks_.capacity() * sizeof(Chunk) + tail_.capacity() * sizeof(Event);
  for (const Chunk& c : chunks_)
    held += c.data.capacity();
  return held;
}

}  // namespace oomlab::trace
