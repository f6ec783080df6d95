#include "trace/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"
#include "trace/load_status.hpp"
#include "trace/recorded_end.hpp"

namespace oomlab::trace {

std::string_view to_string(Format format) {
  if (format == Format::automatic) return "auto";
  const FormatInfo* info = format_info(format);
  return info != nullptr ? std::string_view(info->name) : std::string_view("?");
}

TraceBuilder::TraceBuilder(Format format, std::filesystem::path source)
    : state_(std::make_unique<State>(format, std::move(source))) {
}
TraceBuilder::~TraceBuilder() = default;
TraceBuilder::TraceBuilder(TraceBuilder&&) noexcept = default;
TraceBuilder& TraceBuilder::operator=(TraceBuilder&&) noexcept = default;

void TraceBuilder::add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
                       std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index,
                       std::uint64_t line) {
  state_->add(op, bytes, address, stream, thread, t_ns, index, line);
}

void TraceBuilder::ignore() {
  ++state_->trace_.ignored;
}

std::uint32_t TraceBuilder::stream_number(std::uint64_t stream) {
  return State::number(state_->trace_.streams, stream);
}

Trace& TraceBuilder::trace() {
  return state_->trace_;
}

Trace TraceBuilder::finish() {
  return state_->finish();
}

TraceBuilder::State::State(Format format, std::filesystem::path source) {
  trace_.format = format;
  trace_.source = std::move(source);
}

std::uint32_t TraceBuilder::State::number(std::vector<std::uint64_t>& seen, std::uint64_t handle) {
  // Few streams and threads, and the same one again most of the time: a short scan, last first.
  for (std::size_t i = seen.size(); i-- > 0;) {
    if (seen[i] == handle) return static_cast<std::uint32_t>(i);
  }
  seen.push_back(handle);
  return static_cast<std::uint32_t>(seen.size() - 1);
}

void TraceBuilder::State::add(Op op, std::uint64_t bytes, std::uint64_t address,
                              std::uint64_t stream, std::uint64_t thread, std::uint64_t t_ns,
                              std::uint64_t index, std::uint64_t line) {
  if (trace_.events.empty()) first_t_ns_ = t_ns;
  if (trace_.events.size() >= Event::kNone) {
    throw Error(ErrorKind::input, fmt::format("{}: more than {} events: too large a trace",
                                              trace_.source.string(), Event::kNone - 1));
  }
  Event e{.bytes = bytes,
          .t_ns = t_ns >= first_t_ns_ ? t_ns - first_t_ns_ : 0,
          .index = index,
          .line = line,
          .stream = number(trace_.streams, stream),
          .op = op};
  static_cast<void>(number(threads_, thread));
  if (op == Op::alloc) {
    if (bytes != 0) e.slot = take_slot();
    // An address handed out again without a free: the first block stays leaked.
    if (address != 0 && live_.put(address, e.slot) && trace_.live_reallocations++ == 0) {
      trace_.first_live_reallocation = index;
      trace_.first_live_reallocation_line = line;
    }
  } else if (op == Op::free && address != 0) {
    const std::optional<std::uint32_t> slot = live_.take(address);
    if (!slot) {
      if (trace_.unknown_frees++ == 0) {
        trace_.first_unknown_free = index;
        trace_.first_unknown_free_line = line;
      }
    } else {
      e.slot = *slot;
      if (e.slot != Event::kNone) free_slots_.push_back(e.slot);
    }
  }
  count_demand(e, static_cast<std::uint32_t>(trace_.events.size()));
  trace_.events.push_back(e);
  if ((trace_.events.size() & 4095U) == 0) loading::events(trace_.events.size());
}

std::uint32_t TraceBuilder::State::take_slot() {
  if (free_slots_.empty()) return trace_.slots++;
  const std::uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void TraceBuilder::State::count_demand(const Event& e, std::uint32_t position) {
  Demand& d = trace_.demand;
  switch (e.op) {
    case Op::alloc:
      live_bytes_ += e.bytes;
      if (e.slot != Event::kNone) {
        if (e.slot >= slot_bytes_.size()) slot_bytes_.resize(e.slot + 1);
        slot_bytes_[e.slot] = e.bytes;
      }
      d.last_alloc_at = position;
      if (live_bytes_ > d.peak_live_bytes) {
        d.peak_live_bytes = live_bytes_;
        d.peak_live_at = position;
      }
      break;
    case Op::free:
      if (e.slot != Event::kNone) live_bytes_ -= std::exchange(slot_bytes_[e.slot], 0);
      break;
    case Op::failed:
      if (d.failures++ == 0) d.first_failure_at = position;
      d.last_failure_at = position;
      if (live_bytes_ + e.bytes > d.peak_with_failed_bytes) {
        d.peak_with_failed_bytes = live_bytes_ + e.bytes;
        d.peak_with_failed_at = position;
      }
      break;
  }
}

Trace TraceBuilder::State::finish() {
  Demand& d = trace_.demand;
  if (d.peak_live_bytes >= d.peak_with_failed_bytes) {
    d.peak_with_failed_bytes = d.peak_live_bytes;
    d.peak_with_failed_at = d.peak_live_at;
  }
  trace_.threads = static_cast<std::uint32_t>(threads_.size());
  if (trace_.source_entries == 0)
    trace_.source_entries = trace_.events.size() - trace_.initial_events + trace_.ignored;
  return std::move(trace_);
}

bool ends_at_failure(const Trace& trace) {
  const Demand& d = trace.demand;
  return d.failures > 0 && (d.last_alloc_at == Event::kNone || d.last_failure_at > d.last_alloc_at);
}

bool ended_beside_trace(const Trace& trace) {
  if (!trace.recorded_end) return false;
  const RecordedEnd& end = *trace.recorded_end;
  if (end.outcome == "oom" && end.library) return true;
  return end.outcome != "completed" && !end.outcome.empty() &&
         fatal_failure_at(trace) == Event::kNone;
}

bool stops_short(const Trace& trace) {
  return ends_at_failure(trace) || ended_beside_trace(trace);
}

std::string stops_short_words(const Trace& trace) {
  const bool in_library = trace.recorded_end && trace.recorded_end->library;
  if (ends_at_failure(trace) && !in_library) return "the trace stops at the program's OOM";
  if (!ended_beside_trace(trace)) return {};
  const RecordedEnd& end = *trace.recorded_end;
  if (end.outcome == "oom" && !end.reporter.empty()) {
    return fmt::format("the snapshot stops where the program died in {} (its run record)",
                       end.reporter);
  }
  return fmt::format("the snapshot stops where the program ended in {} (its run record)",
                     end.outcome);
}

bool survived_failure(const Trace& trace, std::uint32_t position) {
  const std::uint32_t last_alloc = trace.demand.last_alloc_at;
  return last_alloc != Event::kNone && position < last_alloc;
}

std::vector<std::uint64_t> survived_failure_sizes(const Trace& trace) {
  std::vector<std::uint64_t> sizes;
  if (trace.demand.failures == 0) return sizes;
  const std::uint32_t last_alloc = trace.demand.last_alloc_at;
  for (std::uint32_t i = trace.demand.first_failure_at; i < trace.events.size() && i < last_alloc;
       ++i) {
    const Event e = trace.events[i];
    if (e.op == Op::failed) sizes.push_back(e.bytes);
  }
  return sizes;
}

std::uint32_t fatal_failure_at(const Trace& trace) {
  if (trace.demand.failures == 0) return Event::kNone;
  if (!survived_failure(trace, trace.demand.first_failure_at)) return trace.demand.first_failure_at;
  if (!ends_at_failure(trace)) return Event::kNone;
  for (std::uint32_t i = trace.demand.last_alloc_at + 1; i < trace.events.size(); ++i) {
    if (trace.events[i].op == Op::failed) return i;
  }
  return Event::kNone;
}

const std::vector<std::string>& RecordedState::frames_of(std::size_t event) const {
  static const std::vector<std::string> kNoFrames;
  if (event >= event_stacks.size() || event_stacks[event] >= stacks.size()) return kNoFrames;
  return stacks[event_stacks[event]];
}

std::optional<std::uint64_t> RecordedState::device_free_at(std::size_t event) const {
  const auto at = std::lower_bound(
      failed_requests.begin(), failed_requests.end(), event,
      [](const FailedRequest& f, std::size_t position) { return f.event < position; });
  if (at == failed_requests.end() || at->event != event) return std::nullopt;
  return at->device_free_bytes;
}

std::optional<std::uint64_t> recorded_device_budget(const Trace& trace) {
  if (!trace.recorded) return std::nullopt;
  const auto found = std::find_if(trace.events.begin(), trace.events.end(),
                                  [](const Event& e) { return e.op == Op::failed; });
  if (found == trace.events.end()) return std::nullopt;
  const Event oom = *found;
  const std::optional<std::uint64_t> free = trace.recorded->device_free_at(found.position());
  if (!free || *free >= oom.bytes) return std::nullopt;
  return recorded_reserved_before(trace, static_cast<std::uint32_t>(found.position())) + *free;
}

namespace {

// The segments reserved as the trace goes, each step told to `seen` (the reserved bytes before
// event `position`, for every position up to `until`).
template <typename Seen>
void walk_reserved(const Trace& trace, std::uint32_t until, const Seen& seen) {
  std::uint64_t reserved = 0;
  static const RecordedState kNone;
  const RecordedState& own = trace.recorded ? *trace.recorded : kNone;
  if (own.initial_segments.empty() && own.segment_entries.empty()) {  // the segment level
    for (std::uint32_t i = 0; i < until; ++i) {
      seen(reserved);
      const Event e = trace.events[i];
      if (e.op == Op::alloc) reserved += e.bytes;
      // A free linked to its allocation; a zero-byte one frees nothing either way.
      if (e.op == Op::free && e.slot != Event::kNone) reserved -= e.bytes;
    }
    seen(reserved);
    return;
  }
  for (const InitialSegment& s : own.initial_segments)
    reserved += s.bytes;
  seen(reserved);
  for (const SegmentEntry& s : own.segment_entries) {
    if (s.before > until) break;
    const bool takes = s.action == SegmentAction::alloc || s.action == SegmentAction::map;
    reserved = takes ? reserved + s.bytes : reserved - std::min(reserved, s.bytes);
    seen(reserved);
  }
}

}  // namespace

std::uint64_t recorded_reserved_before(const Trace& trace, std::uint32_t position) {
  std::uint64_t last = 0;
  walk_reserved(trace, position, [&](std::uint64_t reserved) { last = reserved; });
  return last;
}

std::uint64_t recorded_peak_reserved(const Trace& trace) {
  std::uint64_t peak = 0;
  walk_reserved(trace, static_cast<std::uint32_t>(trace.events.size()),
                [&](std::uint64_t reserved) { peak = std::max(peak, reserved); });
  return peak;
}

Format detect_format(std::string_view head) {
  for (const FormatInfo& f : formats()) {
    if (f.detect(head)) return f.format;
  }
  return Format::automatic;  // unknown
}

std::string file_format(const std::filesystem::path& path) {
  // Only a file: opening a FIFO would wait for a writer.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  std::string head(4096, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  const Format format = detect_format(head);
  return format == Format::automatic ? "" : std::string(to_string(format));
}

void refuse_compressed(const std::filesystem::path& path, std::string_view head) {
  if (head.size() < 2 || static_cast<unsigned char>(head[0]) != 0x1f ||
      static_cast<unsigned char>(head[1]) != 0x8b)
    return;
  throw Error(ErrorKind::input, fmt::format("{}: gzip-compressed: decompress it first (gunzip {})",
                                            path.string(), path.string()));
}

Trace load(const std::filesystem::path& path, const LoadOptions& options) {
  std::ifstream file = open_trace(path);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  loading::begin(ec ? 0 : size);
  struct Ended {
    ~Ended() { loading::end(); }
  } const ended;
  std::string head(4096, '\0');  // room for a byte-order mark and blank lines before a header
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  refuse_compressed(path, head);
  Format format = options.format;
  if (format == Format::automatic) {
    format = detect_format(head);
    if (format == Format::automatic) {
      throw Error(ErrorKind::input,
                  fmt::format("{}: not a trace oomlab knows ({}): name it with --format",
                              path.string(), known_formats()));
    }
  }
  const FormatInfo* info = format_info(format);
  if (info == nullptr) throw Error(ErrorKind::internal, "no importer for the format");
  if (options.check_stop) options.check_stop();
  Trace trace = info->load(path, options);
  trace.recorded_end = recorded_end_beside(path);
  return trace;
}

}  // namespace oomlab::trace
