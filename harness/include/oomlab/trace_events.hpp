// A trace's events, and how they are held (part of oomlab/trace.hpp). A trace of 100 million
// rows (hours of a real job) is held packed: in chunks of 4096 events, each field a column stored
// as the offset from the chunk's smallest value in as few bytes as the chunk's range needs
// (sizes, times, row numbers and slots change little from one event to the next), and read back
// one event at a time. An RMM log of millions of rows takes 10 to 16 bytes an event (a plain
// Event takes 56).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

namespace oomlab::trace {

enum class Op : std::uint8_t {
  alloc,
  free,
  failed,  // a request the program made that failed when it ran (its own OOM)
};

struct Event {
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // An event holds what every format records. What only one format records is the format's own
  // (a PyTorch snapshot's frames, emptied caches and the device's free memory at a failed
  // request: RecordedState, by the event's position). Addresses are not kept: a free is linked to
  // its allocation by their slot.
  std::uint64_t bytes = 0;
  std::uint64_t t_ns = 0;   // since the trace's first event
  std::uint64_t index = 0;  // the event's index in its source (row, or PyTorch trace entry)
  std::uint64_t line = 0;   // the source line, for text formats (0 otherwise)
  // An allocation's slot, reused once its block is freed, so that a replay keeps blocks in
  // Trace::slots entries (the most live at once), not one per event; a free of a known address
  // has its allocation's. kNone: a zero-byte allocation (it holds nothing), or a free of an
  // address that was never allocated.
  std::uint32_t slot = kNone;
  std::uint32_t stream = 0;  // numbered in order of first appearance
  Op op = Op::alloc;
  // An allocation live before the trace began, placed before its first entry.
  bool preexisting = false;
  // An allocation the program goes on without where it is refused (a made trace's request of a
  // side stream, trace::FormatInfo::side_streams): a replay that cannot make it goes on, and its
  // free frees nothing.
  bool refusable = false;
};

class EventStore {
 public:
  // Events are read back by value: `const Event& e = events[i]` holds a copy.
  class const_iterator {  // NOLINT(readability-identifier-naming): the standard library's name
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Event;
    using difference_type = std::ptrdiff_t;
    using reference = Event;
    using pointer = void;

    const_iterator() = default;
    const_iterator(const EventStore* store, std::size_t at) : store_(store), at_(at) {}
    Event operator*() const { return (*store_)[at_]; }
    const_iterator& operator++() {
      ++at_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++at_;
      return before;
    }
    bool operator==(const const_iterator& other) const { return at_ == other.at_; }
    [[nodiscard]] std::size_t position() const { return at_; }

   private:
    const EventStore* store_ = nullptr;
    std::size_t at_ = 0;
  };

  void push_back(const Event& e);
  // The event pushed last, still unpacked: an importer completes it (its flags).
  [[nodiscard]] Event& last() { return tail_.back(); }

  [[nodiscard]] Event operator[](std::size_t i) const;
  [[nodiscard]] std::size_t size() const { return packed_ + tail_.size(); }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] const_iterator begin() const { return {this, 0}; }
  [[nodiscard]] const_iterator end() const { return {this, size()}; }
  // The memory the events take (the chunks, their headers, the unpacked tail).
  [[nodiscard]] std::size_t bytes_held() const;

  static constexpr unsigned kChunkBits = 12;
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkBits;
  // The events of chunk `chunk` (the 4096 from chunk * 4096 on, fewer in the last), unpacked
  // into `out` a column at a time: what a pass over the whole trace reads (EventReader).
  void unpack(std::size_t chunk, std::vector<Event>& out) const;

 private:
  enum Column : std::uint8_t { bytes, t_ns, index, line, slot, stream, flags };
  static constexpr std::size_t kColumns = 7;

  struct Chunk {
    std::array<std::uint64_t, kColumns> base{};
    std::array<std::uint32_t, kColumns> offset{};
    std::array<std::uint8_t, kColumns> width{};  // bytes per value: 0 (all the base) to 8
    std::vector<std::uint8_t> data;              // column after column, 8 bytes of slack
  };

  struct ColumnView;
  static std::array<ColumnView, kColumns> columns(const Chunk& c);
  static Event decode(const std::array<ColumnView, kColumns>& c, std::size_t j);
  void pack_tail();
  static std::uint64_t value(const Event& e, Column column);

  std::vector<Chunk> chunks_;
  std::vector<Event> tail_;  // the last events, not packed until a chunk's worth has come
  std::size_t packed_ = 0;
};

// A pass over a trace, in order or near it: the chunk that holds the event asked for is unpacked
// whole, and its events handed out from there (a reference, valid until an event of another
// chunk is asked for).
class EventReader {
 public:
  explicit EventReader(const EventStore& store) : store_(store) {}
  const Event& operator[](std::size_t i) {
    const std::size_t chunk = i >> EventStore::kChunkBits;
    if (chunk != current_) {
      store_.unpack(chunk, buffer_);
      current_ = chunk;
    }
    return buffer_[i & (EventStore::kChunk - 1)];
  }

 private:
  const EventStore& store_;
  std::vector<Event> buffer_;
  std::size_t current_ = SIZE_MAX;
};

}  // namespace oomlab::trace
