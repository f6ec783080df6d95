// A PyTorch snapshot as a trace. The history often starts after the model was loaded: what was
// live then (blocks freed in the history that it never allocated, and blocks still active at the
// end that it never allocated) is placed before the first entry, in the segments that held it
// (segments the history frees without having allocated them, those alive at the end that it
// never allocated, and the mapped pages of expandable segments, walked back from the end). At the
// tensor level the real allocator's own segment calls are kept beside the events, and a release
// of cached segments that PyTorch would not have made by itself (an explicit empty_cache()) marks
// the event after it.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "pytorch/model/torch_config.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "pytorch/trace/pytorch_snapshot.hpp"
#include "trace/address_set.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

namespace {

using Kind = SnapshotEntry::Kind;
constexpr std::uint64_t kPage = 2_MiB;  // segment level: expandable mappings, page by page

bool is_segment_call(Kind k) {
  return k == Kind::segment_alloc || k == Kind::segment_free || k == Kind::segment_map ||
         k == Kind::segment_unmap;
}
bool gives_back(Kind k) {
  return k == Kind::segment_free || k == Kind::segment_unmap;
}
bool takes(Kind k) {
  return k == Kind::segment_alloc || k == Kind::segment_map;
}

// Address ranges [start, end), joined where they touch.
class Ranges {
 public:
  void add(std::uint64_t start, std::uint64_t end) {
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin() && std::prev(it)->second >= start) --it;
    while (it != ranges_.end() && it->first <= end) {
      start = std::min(start, it->first);
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(start, end);
  }
  void remove(std::uint64_t start, std::uint64_t end) {
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin() && std::prev(it)->second > start) --it;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> kept;
    while (it != ranges_.end() && it->first < end) {
      if (it->first < start) kept.emplace_back(it->first, start);
      if (it->second > end) kept.emplace_back(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.insert(kept.begin(), kept.end());
  }
  [[nodiscard]] const std::map<std::uint64_t, std::uint64_t>& all() const { return ranges_; }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;
};

// Segments alive when the history began.
std::vector<InitialSegment> initial_segments(const Snapshot& s) {
  std::vector<InitialSegment> out;
  AddressSet made;  // by a segment_alloc of the history, still alive
  for (const SnapshotEntry& e : s.entries) {
    if (e.kind == Kind::segment_alloc) made.insert(e.address);
    if (e.kind == Kind::segment_free && !made.erase(e.address)) {
      out.push_back({.address = e.address,
                     .bytes = e.bytes,
                     .stream = static_cast<std::uint32_t>(e.stream),
                     .small_pool = e.bytes == torch::kSmallSegmentBytes});
    }
  }
  Ranges mapped;  // expandable: mapped at the end, walked back to the start
  for (const SnapshotSegment& seg : s.segments) {
    if (seg.expandable) {
      if (seg.bytes > 0) mapped.add(seg.address, seg.address + seg.bytes);
    } else if (!made.contains(seg.address)) {
      out.push_back({.address = seg.address,
                     .bytes = seg.bytes,
                     .stream = static_cast<std::uint32_t>(seg.stream),
                     .small_pool = seg.small_pool});
    }
  }
  for (auto it = s.entries.rbegin(); it != s.entries.rend(); ++it) {
    if (it->bytes == 0) continue;
    if (it->kind == Kind::segment_map) mapped.remove(it->address, it->address + it->bytes);
    if (it->kind == Kind::segment_unmap) mapped.add(it->address, it->address + it->bytes);
  }
  for (const auto& [start, end] : mapped.all()) {
    InitialSegment run{.address = start, .bytes = end - start, .expandable = true};
    for (const SnapshotSegment& seg : s.segments) {
      if (seg.expandable && seg.address < run.address + run.bytes &&
          run.address < seg.address + seg.bytes) {
        run.small_pool = seg.small_pool;
        run.stream = static_cast<std::uint32_t>(seg.stream);
      }
    }
    out.push_back(run);
  }
  std::sort(out.begin(), out.end(),
            [](const InitialSegment& a, const InitialSegment& b) { return a.address < b.address; });
  return out;
}

struct LiveBefore {
  std::uint64_t address;
  std::uint64_t bytes;
  std::uint64_t block_bytes;
  std::uint64_t stream;
};

// Blocks live when the history began: freed by it without being allocated by it, or active at
// the end without being allocated by it.
std::vector<LiveBefore> live_before(const Snapshot& s) {
  std::vector<LiveBefore> out;
  AddressSet live;
  for (const SnapshotEntry& e : s.entries) {
    if (e.kind == Kind::alloc) live.insert(e.address);
    if (e.kind == Kind::free_completed && !live.erase(e.address))
      out.push_back({e.address, e.bytes, 0, e.stream});
  }
  for (const SnapshotSegment& seg : s.segments) {
    for (const SnapshotSegment::Block& b : seg.blocks) {
      if (b.active && !live.contains(b.address))
        out.push_back({b.address, b.requested, b.bytes, seg.stream});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const LiveBefore& a, const LiveBefore& b) { return a.address < b.address; });
  return out;
}

// Puts each live block in the segment that holds it (one of its own when none does), in address
// order; a block that would overlap the one before it is left out.
void place_blocks(std::vector<InitialSegment>& segments, const std::vector<LiveBefore>& blocks) {
  for (const LiveBefore& b : blocks) {
    auto it = std::upper_bound(
        segments.begin(), segments.end(), b.address,
        [](std::uint64_t a, const InitialSegment& seg) { return a < seg.address; });
    InitialSegment* home = nullptr;
    if (it != segments.begin() && b.address < std::prev(it)->address + std::prev(it)->bytes)
      home = &*std::prev(it);
    const std::uint64_t extent = std::max(b.block_bytes, b.bytes);
    if (home == nullptr) {
      const bool small = extent <= torch::kSmallRequestBytes;
      InitialSegment own{.address = b.address,
                         .bytes = small ? torch::kSmallSegmentBytes : round_up(extent, kPage),
                         .stream = static_cast<std::uint32_t>(b.stream),
                         .small_pool = small};
      it = segments.insert(std::upper_bound(segments.begin(), segments.end(), b.address,
                                            [](std::uint64_t a, const InitialSegment& seg) {
                                              return a < seg.address;
                                            }),
                           own);
      home = &*it;
    }
    const std::uint64_t offset = b.address - home->address;
    const bool overlaps =
        !home->blocks.empty() &&
        offset < home->blocks.back().offset +
                     std::max(home->blocks.back().block_bytes, home->blocks.back().bytes);
    if (overlaps || offset + extent > home->bytes) continue;
    home->blocks.push_back({.offset = offset, .bytes = b.bytes, .block_bytes = b.block_bytes});
  }
}

// Whether the cached segments given back just before `next` were the program's own release
// (torch.cuda.empty_cache()) rather than PyTorch's retry after the device refused a segment.
// PyTorch gives segments back by itself only on the way to a new segment (or an OOM), and only
// when the new one would not fit beside what it held: past the most it ever held.
struct ReleaseClassifier {
  std::uint64_t peak = 0;  // the most reserved at any point of the history
  bool collects = false;   // garbage_collection_threshold frees segments by itself too
  [[nodiscard]] bool explicit_release(const SnapshotEntry* next, std::uint64_t reserved_before,
                                      std::uint64_t taken_after) const {
    if (next == nullptr || next->kind == Kind::free_completed) return true;
    if (next->kind == Kind::oom) return false;
    if (taken_after == 0) return true;  // served from the cache: nothing forced the release
    return !collects && reserved_before + taken_after <= peak;
  }
};

ReleaseClassifier classifier_for(const Snapshot& s, std::uint64_t initial_reserved) {
  ReleaseClassifier c{.peak = initial_reserved};
  std::uint64_t reserved = initial_reserved;
  for (const SnapshotEntry& e : s.entries) {
    if (takes(e.kind)) c.peak = std::max(c.peak, reserved += e.bytes);
    if (gives_back(e.kind)) reserved -= std::min(reserved, e.bytes);
  }
  c.collects = s.settings && s.settings->get<double>("garbage_collection_threshold") > 0.0;
  return c;
}

class Assembler {
 public:
  Assembler(const std::filesystem::path& path, const Snapshot& snapshot, Level level)
      : snapshot_(snapshot), level_(level), path_(path), builder_(pytorch_format(), path) {}

  Trace assemble() {
    Trace& t = builder_.trace();
    RecordedState& own = t.recorded.emplace();
    own.stacks = snapshot_.stacks;
    own.allocator_settings = snapshot_.settings.value_or(snapshot_settings());
    note_fraction_cap(t);
    place_initial_state(t);
    walk(t);
    return builder_.finish();
  }

 private:
  // An OOM that left the device room for the request was PyTorch's own cap.
  void note_fraction_cap(Trace& t) const {
    for (const SnapshotEntry& e : snapshot_.entries) {
      if (e.kind != Kind::oom) continue;
      if (e.address < e.bytes) return;
      if (!t.recorded->allocator_settings) t.recorded->allocator_settings = snapshot_settings();
      t.recorded->allocator_settings->options["budget_by"] = std::string("fraction");
      return;
    }
  }

  // An event of the trace; its frames and, for a failed request, the device's free memory (the
  // entry's address field) go to the PyTorch part, by the event's position.
  void add(Op op, std::uint64_t bytes, std::uint64_t address, const SnapshotEntry& source) {
    builder_.add(op, bytes, address, source.stream, 0, source.t_ns, source.index, 0);
    RecordedState& p = *builder_.trace().recorded;
    const auto at = static_cast<std::uint32_t>(builder_.trace().events.size() - 1);
    if (source.stack != Event::kNone) {
      p.event_stacks.resize(at + 1, Event::kNone);
      p.event_stacks[at] = source.stack;
    }
    if (op == Op::failed) p.failed_requests.push_back({.event = at, .device_free_bytes = address});
  }

  void place_initial_state(Trace& t) {
    std::vector<InitialSegment> segments = initial_segments(snapshot_);
    if (level_ == Level::tensor) {
      place_blocks(segments, live_before(snapshot_));
    } else {
      for (InitialSegment& seg : segments)
        seg.blocks.push_back({.offset = 0, .bytes = seg.bytes, .block_bytes = seg.bytes});
    }
    const SnapshotEntry origin = snapshot_.entries.empty() ? SnapshotEntry{} : snapshot_.entries[0];
    for (InitialSegment& seg : segments) {
      initial_reserved_ += seg.bytes;
      const std::uint64_t stream = seg.stream;
      seg.stream = builder_.stream_number(stream);
      for (InitialSegment::Live& live : seg.blocks) {
        if (seg.expandable && level_ == Level::segment) {
          count_pages(live.bytes, origin);
          for (std::uint64_t a = 0; a < live.bytes; a += kPage) {  // page by page, as it is walked
            builder_.add(Op::alloc, kPage, seg.address + a, stream, 0, origin.t_ns, 0, 0);
            t.events.last().preexisting = true;
          }
          continue;
        }
        live.event = static_cast<std::uint32_t>(t.events.size());
        builder_.add(Op::alloc, live.bytes, seg.address + live.offset, stream, 0, origin.t_ns, 0,
                     0);
        t.events.last().preexisting = true;
      }
    }
    t.initial_events = static_cast<std::uint32_t>(t.events.size());
    if (level_ == Level::tensor) t.recorded->initial_segments = std::move(segments);
  }

  void walk(Trace& t) {
    const ReleaseClassifier classifier = classifier_for(snapshot_, initial_reserved_);
    std::uint64_t reserved = initial_reserved_;
    std::uint64_t reserved_before_release = 0;
    std::uint64_t taken_after_release = 0;
    bool releasing = false;
    const auto end_group = [&](const SnapshotEntry* next) {
      if (!releasing) return;
      releasing = false;
      const bool own =
          classifier.explicit_release(next, reserved_before_release, taken_after_release);
      if (!own) return;
      if (next == nullptr) {
        t.recorded->release_at_end = true;
      } else {
        pending_release_ = true;
      }
    };
    for (const SnapshotEntry& e : snapshot_.entries) {
      if (is_segment_call(e.kind)) {
        if (gives_back(e.kind) && !releasing) {
          releasing = true;
          reserved_before_release = reserved;
          taken_after_release = 0;
        }
        if (takes(e.kind)) {
          reserved += e.bytes;
          if (releasing) taken_after_release += e.bytes;
        } else {
          reserved -= std::min(reserved, e.bytes);
        }
        segment_call(t, e);
        continue;
      }
      end_group(&e);
      event(t, e);
    }
    end_group(nullptr);
  }

  void segment_call(Trace& t, const SnapshotEntry& e) {
    if (level_ == Level::tensor) {
      t.recorded->segment_entries.push_back(
          {.index = e.index,
           .bytes = e.bytes,
           .address = e.address,
           .before = static_cast<std::uint32_t>(t.events.size()),
           .action = e.kind == Kind::segment_alloc  ? SegmentAction::alloc
                     : e.kind == Kind::segment_free ? SegmentAction::free
                     : e.kind == Kind::segment_map  ? SegmentAction::map
                                                    : SegmentAction::unmap});
      builder_.ignore();
      return;
    }
    const Op op = takes(e.kind) ? Op::alloc : Op::free;
    if (e.kind == Kind::segment_alloc || e.kind == Kind::segment_free) {
      add(op, e.bytes, e.address, e);
      return;
    }
    count_pages(e.bytes, e);
    for (std::uint64_t a = e.address; a < e.address + e.bytes; a += kPage)  // pages pair up
      add(op, kPage, a, e);
  }

  // Expandable mappings are replayed page by page at the segment level; no GPU maps this many.
  void count_pages(std::uint64_t bytes, const SnapshotEntry& at) {
    paged_ += ceil_div(bytes, kPage);
    if (paged_ > kMostPages) {
      throw Error(ErrorKind::input,
                  fmt::format("{}: device_traces entry {}: expandable segments map more than {} "
                              "pages: not a trace of any GPU",
                              path_.string(), at.index, kMostPages));
    }
  }

  void event(Trace& t, const SnapshotEntry& e) {
    if (e.kind == Kind::oom) {
      add(Op::failed, e.bytes, e.address, e);  // a failed request's address: the device's free
    } else if (level_ == Level::tensor) {
      add(e.kind == Kind::alloc ? Op::alloc : Op::free, e.bytes, e.address, e);
    } else {
      builder_.ignore();
      return;
    }
    if (pending_release_)
      t.recorded->emptied_cache_before.push_back(static_cast<std::uint32_t>(t.events.size() - 1));
    pending_release_ = false;
  }

  static constexpr std::uint64_t kMostPages = 1ULL << 24U;  // 32 TiB mapped over a history

  const Snapshot& snapshot_;
  Level level_;
  const std::filesystem::path& path_;
  std::uint64_t paged_ = 0;
  TraceBuilder builder_;
  std::uint64_t initial_reserved_ = 0;
  bool pending_release_ = false;
};

}  // namespace

Trace build_pytorch_trace(const std::filesystem::path& path, const Snapshot& snapshot,
                          Level level) {
  Trace trace = Assembler(path, snapshot, level).assemble();
  trace.ignored += snapshot.other_entries;
  if (trace.recorded) {
    trace.recorded->unknown_actions.assign(snapshot.unknown_actions.begin(),
                                           snapshot.unknown_actions.end());
  }
  trace.source_entries = snapshot.entries.size() + snapshot.other_entries;
  if (!snapshot.notice.empty()) trace.notices.push_back(snapshot.notice);
  return trace;
}

}  // namespace oomlab::torch
