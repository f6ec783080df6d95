#include "trace/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <mutex>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"

namespace oomlab::trace {

std::string_view to_string(Format format) {
  switch (format) {
    case Format::automatic:
      return "auto";
    case Format::oomlab:
      return "oomlab";
    case Format::rmm:
      return "rmm";
    case Format::pytorch:
      return "pytorch";
  }
  return "?";
}

namespace {

// Address -> the event of the allocation live there, for finish(). Open addressing (linear
// probing, deletion by shifting back, 0 as the empty key: address 0 is never live): millions of
// inserts and erases without a node allocation each, as std::unordered_map makes.
class LiveAddresses {
 public:
  LiveAddresses() : entries_(std::size_t{1} << kFirstBits) {}

  void put(std::uint64_t address, std::uint32_t event) {
    if ((count_ + 1) * 2 > entries_.size()) grow();
    std::size_t i = home(address);
    while (entries_[i].address != 0 && entries_[i].address != address)
      i = next(i);
    if (entries_[i].address == 0) ++count_;
    entries_[i] = {.address = address, .event = event};
  }

  // The event live at `address`, now no longer; Event::kNoPartner when none is.
  std::uint32_t take(std::uint64_t address) {
    std::size_t i = home(address);
    for (; entries_[i].address != address; i = next(i)) {
      if (entries_[i].address == 0) return Event::kNoPartner;
    }
    const std::uint32_t event = entries_[i].event;
    close_gap(i);
    --count_;
    return event;
  }

 private:
  struct Entry {
    std::uint64_t address = 0;
    std::uint32_t event = 0;
  };
  static constexpr unsigned kFirstBits = 10;

  [[nodiscard]] std::size_t home(std::uint64_t address) const {
    return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15ULL) >> shift_);  // high bits
  }
  [[nodiscard]] std::size_t next(std::size_t i) const { return (i + 1) & (entries_.size() - 1); }

  // Moves later entries of the run back into the gap where their probe passes it.
  void close_gap(std::size_t gap) {
    const std::size_t mask = entries_.size() - 1;
    for (std::size_t i = next(gap); entries_[i].address != 0; i = next(i)) {
      if (((i - home(entries_[i].address)) & mask) >= ((i - gap) & mask)) {
        entries_[gap] = entries_[i];
        gap = i;
      }
    }
    entries_[gap] = {};
  }

  void grow() {
    std::vector<Entry> old(entries_.size() * 2);
    old.swap(entries_);
    --shift_;
    count_ = 0;
    for (const Entry& e : old) {
      if (e.address != 0) put(e.address, e.event);
    }
  }

  std::vector<Entry> entries_;
  unsigned shift_ = 64 - kFirstBits;
  std::size_t count_ = 0;
};

}  // namespace

TraceBuilder::TraceBuilder(Format format, std::filesystem::path source) {
  trace_.format = format;
  trace_.source = std::move(source);
}

std::uint32_t TraceBuilder::number(std::vector<std::uint64_t>& seen, std::uint64_t handle) {
  // Few streams and threads, and the same one again most of the time: a short scan, last first.
  for (std::size_t i = seen.size(); i-- > 0;) {
    if (seen[i] == handle) return static_cast<std::uint32_t>(i);
  }
  seen.push_back(handle);
  return static_cast<std::uint32_t>(seen.size() - 1);
}

void TraceBuilder::add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
                       std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index,
                       std::uint64_t line) {
  if (trace_.events.empty()) first_t_ns_ = t_ns;
  if (trace_.events.size() >= Event::kNoPartner) {
    throw Error(ErrorKind::input, fmt::format("{}: more than {} events: too large a trace",
                                              trace_.source.string(), Event::kNoPartner - 1));
  }
  trace_.events.push_back(Event{.bytes = bytes,
                                .address = address,
                                .t_ns = t_ns >= first_t_ns_ ? t_ns - first_t_ns_ : 0,
                                .index = index,
                                .line = line,
                                .stream = number(trace_.streams, stream),
                                .thread = number(threads_, thread),
                                .op = op});
}

Trace TraceBuilder::finish() {
  LiveAddresses live;
  std::vector<std::uint32_t> free_slots;
  const auto take_slot = [&] {
    if (free_slots.empty()) return trace_.slots++;
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  };
  for (std::uint32_t i = 0; i < trace_.events.size(); ++i) {
    Event& e = trace_.events[i];
    if (e.op == Op::alloc) {
      if (e.bytes != 0) e.slot = take_slot();
      // An address handed out again without a free: the first block stays leaked.
      if (e.address != 0) live.put(e.address, i);
    } else if (e.op == Op::free && e.address != 0) {
      const std::uint32_t alloc = live.take(e.address);
      if (alloc == Event::kNoPartner) {
        if (trace_.unknown_frees++ == 0) trace_.first_unknown_free = e.index;
        continue;
      }
      e.partner = alloc;
      e.slot = trace_.events[alloc].slot;
      if (e.slot != Event::kNoPartner) free_slots.push_back(e.slot);
    }
  }
  trace_.threads = static_cast<std::uint32_t>(threads_.size());
  return std::move(trace_);
}

std::optional<std::uint64_t> recorded_device_budget(const Trace& trace) {
  if (trace.format != Format::pytorch) return std::nullopt;
  const auto oom = std::find_if(trace.events.begin(), trace.events.end(),
                                [](const Event& e) { return e.op == Op::failed; });
  if (oom == trace.events.end() || oom->address >= oom->bytes) return std::nullopt;
  const auto position = static_cast<std::uint32_t>(oom - trace.events.begin());
  std::uint64_t reserved = 0;
  if (trace.initial_segments.empty() && trace.segment_entries.empty()) {  // the segment level
    for (auto e = trace.events.begin(); e != oom; ++e) {
      if (e->op == Op::alloc) reserved += e->bytes;
      if (e->op == Op::free && e->partner != Event::kNoPartner) reserved -= e->bytes;
    }
    return reserved + oom->address;
  }
  for (const InitialSegment& s : trace.initial_segments)
    reserved += s.bytes;
  for (const SegmentEntry& s : trace.segment_entries) {
    if (s.before > position) break;
    const bool takes = s.action == SegmentAction::alloc || s.action == SegmentAction::map;
    reserved = takes ? reserved + s.bytes : reserved - std::min(reserved, s.bytes);
  }
  return reserved + oom->address;
}

Format detect_format(std::string_view head) {
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80)
    return Format::pytorch;                                     // pickle PROTO
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);  // a UTF-8 byte-order mark
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return Format::automatic;
  if (head[first] == '{') return Format::pytorch;  // its JSON dump
  head.remove_prefix(first);  // blank lines before the header: the CSV readers skip them too
  if (head.starts_with("Thread,Time,Action,Pointer,Size,Stream")) return Format::rmm;
  if (head.starts_with("seq,t_ns,step,phase,op,bytes,ptr")) return Format::oomlab;
  return Format::automatic;  // unknown
}

std::shared_ptr<const Trace> load_shared(const std::filesystem::path& path,
                                         const LoadOptions& options) {
  struct Key {
    std::filesystem::path path;
    std::uintmax_t size = 0;
    std::filesystem::file_time_type modified;
    Format format = Format::automatic;
    Level level = Level::tensor;
    std::uint32_t device = 0;
    bool operator==(const Key&) const = default;
  };
  static std::mutex mutex;
  static Key cached_key;
  static std::shared_ptr<const Trace> cached;
  std::error_code ec;
  Key key{.path = std::filesystem::absolute(path, ec),
          .size = std::filesystem::file_size(path, ec),
          .modified = std::filesystem::last_write_time(path, ec),
          .format = options.format,
          .level = options.level,
          .device = options.device};
  const std::lock_guard lock(mutex);
  if (!ec && cached && key == cached_key) return cached;
  cached.reset();  // the old one goes before the new one is read
  auto trace = std::make_shared<const Trace>(load(path, options));
  if (!ec) {
    cached_key = std::move(key);
    cached = trace;
  }
  return trace;
}

Trace load(const std::filesystem::path& path, const LoadOptions& options) {
  std::ifstream file = open_trace(path);
  std::string head(4096, '\0');  // room for a byte-order mark and blank lines before a header
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  Format format = options.format;
  if (format == Format::automatic) {
    format = detect_format(head);
    if (format == Format::automatic) {
      throw Error(
          ErrorKind::input,
          fmt::format("{}: not a trace oomlab knows (an events.csv, an RMM log, or a PyTorch "
                      "snapshot as pickle or JSON): name it with --format",
                      path.string()));
    }
  }
  StopPoll poll(options.check_stop);
  poll.now();
  switch (format) {
    case Format::oomlab:
      return load_oomlab_csv(path, std::move(poll));
    case Format::rmm:
      return load_rmm_csv(path, std::move(poll));
    case Format::pytorch:
      return load_pytorch_snapshot(path, options.level, options.device, std::move(poll));
    case Format::automatic:
      break;
  }
  throw Error(ErrorKind::internal, "no importer for the format");
}

}  // namespace oomlab::trace
