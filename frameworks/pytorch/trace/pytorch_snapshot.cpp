// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot(): a pickle; or the same snapshot
// dumped as JSON), read into a Snapshot: device_traces[device] (alloc, free_completed,
// segment_alloc / segment_map, segment_free / segment_unmap and oom entries, with their Python
// frames when recorded), the `segments` of that device as they were at the end, and the
// allocator_settings. Other entries (free_requested, snapshot, ...) are counted.
#include "pytorch/trace/pytorch_snapshot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "oomlab/error.hpp"
#include "pytorch/trace/pickle.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "pytorch/trace/snapshot_device.hpp"
#include "pytorch/trace/snapshot_views.hpp"
#include "trace/importers.hpp"
#include "trace/load_status.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

namespace {

using Kind = SnapshotEntry::Kind;

std::optional<Kind> classify(std::string_view action) {
  if (action == "alloc") return Kind::alloc;
  if (action == "free_completed") return Kind::free_completed;
  if (action == "segment_alloc") return Kind::segment_alloc;
  if (action == "segment_free") return Kind::segment_free;
  if (action == "segment_map") return Kind::segment_map;
  if (action == "segment_unmap") return Kind::segment_unmap;
  if (action == "oom") return Kind::oom;
  return std::nullopt;
}

// Entries PyTorch writes that a replay has no use for: a free asked for (its block goes back at
// free_completed), and the mark of a snapshot taken.
bool ignored_action(std::string_view action) {
  return action == "free_requested" || action == "snapshot";
}

// Where in the snapshot a value is, formatted only for a message.
struct At {
  std::string_view list;  // "device_traces[0]", "segments"
  std::size_t index;
  [[nodiscard]] std::string text() const { return fmt::format("{}[{}]", list, index); }
};

template <typename View>
class SnapshotReader {
 public:
  SnapshotReader(const std::filesystem::path& path, const DeviceAsked& asked, StopPoll& poll)
      : path_(path), asked_(asked), poll_(poll) {}

  Snapshot read(const View& root) {
    if (!root.is_dict()) fail(root, "the top level", "not a dict: not a PyTorch memory snapshot");
    read_entries(device_trace(root));
    if (const auto segments = root.get("segments")) read_segments(*segments);
    if (const auto settings = root.get("allocator_settings")) read_settings(*settings);
    return std::move(snapshot_);
  }

 private:
  [[noreturn]] void fail(const View& at, std::string_view where, std::string_view what) const {
    throw Error(ErrorKind::input,
                fmt::format("{}: {}{}: {}", path_.string(), where, at.where(), what));
  }

  // The device trace read (pick_device): the one named, else the one that holds a history.
  View device_trace(const View& root) {
    const auto traces = root.get("device_traces");
    if (!traces)
      fail(root, "the top level",
           "no 'device_traces': not a memory snapshot with its history recorded");
    if (!traces->is_list()) fail(*traces, "device_traces", "not a list");
    std::optional<std::uint32_t> asked = asked_.device;
    if (!asked && traces->size() == 1) asked = 0;  // the only one: read as if it were named
    if (asked && *asked < traces->size() && !traces->at(*asked).is_list())
      fail(traces->at(*asked), fmt::format("device_traces[{}]", *asked), "not a list");
    std::vector<std::uint64_t> entries;
    for (std::size_t d = 0; d < traces->size(); ++d) {
      const View t = traces->at(d);
      entries.push_back(t.is_list() ? t.size() : 0);
    }
    const DevicePick pick = pick_device(entries, {.device = asked, .option = asked_.option});
    if (!pick.what.empty())
      fail(pick.at_list ? *traces : traces->at(pick.device), pick.where, pick.what);
    device_ = pick.device;
    snapshot_.notice = pick.notice;
    return traces->at(device_);
  }

  std::uint64_t field(const View& entry, const At& at, std::string_view key, bool required) const {
    return field(entry, entry.get(key), at, key, required);
  }
  std::uint64_t field(const View& entry, const std::optional<View>& value, const At& at,
                      std::string_view key, bool required) const {
    if (!value) {
      if (required) fail(entry, at.text(), fmt::format("'{}' is missing", key));
      return 0;
    }
    const auto number = value->integer();
    if (!number) fail(*value, at.text(), fmt::format("'{}' is not an integer", key));
    if (*number < 0) fail(*value, at.text(), fmt::format("'{}' is negative ({})", key, *number));
    if ((key == "size" || key == "total_size") &&
        static_cast<std::uint64_t>(*number) > kLargestSize) {
      fail(*value, at.text(), fmt::format("'{}' {} is not a size any allocator has", key, *number));
    }
    return static_cast<std::uint64_t>(*number);
  }

  // The keys of an entry that are read, found in one pass over it (a look-up each was a pass
  // each); the first of a repeated key counts, as with get().
  struct EntryFields {
    std::optional<View> action, size, addr, device_free, stream, time_us, frames;
  };
  static EntryFields fields_of(const View& entry) {
    EntryFields f;
    entry.for_each_entry([&f](std::string_view key, const View& value) {
      std::optional<View>* slot = nullptr;
      switch (key.size()) {  // by length first: most keys are then one comparison away
        case 4:
          slot = key == "size" ? &f.size : key == "addr" ? &f.addr : nullptr;
          break;
        case 6:
          slot = key == "action"   ? &f.action
                 : key == "stream" ? &f.stream
                 : key == "frames" ? &f.frames
                                   : nullptr;
          break;
        case 7:
          slot = key == "time_us" ? &f.time_us : nullptr;
          break;
        case 11:
          slot = key == "device_free" ? &f.device_free : nullptr;
          break;
        default:
          break;
      }
      if (slot != nullptr && !*slot) slot->emplace(value);
    });
    return f;
  }

  void read_entries(const View& entries) {
    const std::string list = fmt::format("device_traces[{}]", device_);
    snapshot_.entries.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      poll_();
      const View entry = entries.at(i);
      const At at{list, i};
      if (!entry.is_dict()) fail(entry, at.text(), "not a dict");
      const EntryFields f = fields_of(entry);
      const auto action = f.action ? f.action->text() : std::nullopt;
      if (!action) fail(entry, at.text(), "'action' is missing or not a string");
      const std::optional<Kind> kind = classify(*action);
      if (!kind) {
        ++snapshot_.other_entries;
        if (!ignored_action(*action)) ++snapshot_.unknown_actions[std::string(*action)];
        continue;
      }
      SnapshotEntry e{.kind = *kind, .index = i};
      e.bytes = field(entry, f.size, at, "size", true);
      e.address = *kind == Kind::oom ? field(entry, f.device_free, at, "device_free", false)
                                     : field(entry, f.addr, at, "addr", true);
      e.stream = field(entry, f.stream, at, "stream", false);
      e.t_ns = field(entry, f.time_us, at, "time_us", false) * 1000;
      if (f.frames && f.frames->is_list() && f.frames->size() > 0)
        e.stack = intern_stack(*f.frames);
      snapshot_.entries.push_back(e);
    }
  }

  // A stack as "name (file:line)" lines, innermost first; the same stack is kept once. The
  // innermost frames are kept whatever they are, then Python frames only: a stack of C++ and
  // Python frames (stacks='all') keeps the user's own lines, which lie outermost.
  std::uint32_t intern_stack(const View& frames) {
    constexpr std::size_t kInnermost = 16;
    constexpr std::size_t kMostFrames = 64;
    std::vector<std::string> lines;
    for (std::size_t f = 0; f < frames.size() && lines.size() < kMostFrames; ++f) {
      const View frame = frames.at(f);
      if (!frame.is_dict()) continue;
      const auto name = frame.get("name");
      const auto file = frame.get("filename");
      const auto line = frame.get("line");
      const std::string_view file_name = file && file->text() ? *file->text() : "?";
      if (lines.size() >= kInnermost && !file_name.ends_with(".py")) continue;
      lines.push_back(fmt::format("{} ({}:{})", name && name->text() ? *name->text() : "?",
                                  file_name, line && line->integer() ? *line->integer() : 0));
    }
    std::string key = fmt::format("{}", fmt::join(lines, "\n"));
    const auto [it, inserted] =
        stack_ids_.emplace(std::move(key), static_cast<std::uint32_t>(snapshot_.stacks.size()));
    if (inserted) snapshot_.stacks.push_back(std::move(lines));
    return it->second;
  }

  void read_segments(const View& segments) {
    if (!segments.is_list()) fail(segments, "segments", "not a list");
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const View segment = segments.at(i);
      const At at{"segments", i};
      if (!segment.is_dict()) fail(segment, at.text(), "not a dict");
      if (field(segment, at, "device", false) != device_) continue;
      SnapshotSegment s;
      s.address = field(segment, at, "address", true);
      s.bytes = field(segment, at, "total_size", true);
      s.stream = field(segment, at, "stream", false);
      const auto type = segment.get("segment_type");
      s.small_pool = type && type->text() && *type->text() == "small";
      const auto expandable = segment.get("is_expandable");
      s.expandable = expandable && expandable->boolean().value_or(false);
      if (const auto blocks = segment.get("blocks"); blocks && blocks->is_list()) {
        std::uint64_t address = s.address;
        for (std::size_t b = 0; b < blocks->size(); ++b) {
          const View block = blocks->at(b);
          if (!block.is_dict()) fail(block, at.text(), "a block is not a dict");
          SnapshotSegment::Block sb;
          sb.bytes = field(block, at, "size", true);
          sb.requested = field(block, at, "requested_size", false);
          sb.address = block.get("address") ? field(block, at, "address", true) : address;
          const auto state = block.get("state");
          sb.active = state && state->text() && state->text()->starts_with("active");
          address = sb.address + sb.bytes;
          s.blocks.push_back(sb);
        }
      }
      snapshot_.segments.push_back(std::move(s));
    }
  }

  // Each as the torch backend's option of that name: a size in bytes (max_split_size -1, no
  // limit, is the option's max), roundup_power2_divisions one number where every size has the
  // same, else the list by size from 1 MB (per_size_divisions reads it back).
  void read_settings(const View& settings) {
    if (!settings.is_dict()) return;
    RecordedSettings r = snapshot_settings();
    if (const auto v = settings.get("expandable_segments"); v && v->boolean())
      r.options["expandable_segments"] = *v->boolean();
    if (const auto v = settings.get("max_split_size"); v && v->integer()) {
      r.options["max_split_size"] =
          Bytes{*v->integer() < 0 ? UINT64_MAX : static_cast<std::uint64_t>(*v->integer())};
    }
    if (const auto v = settings.get("garbage_collection_threshold"); v && v->number())
      r.options["garbage_collection_threshold"] = *v->number();
    if (const auto v = settings.get("roundup_power2_divisions"); v && v->is_dict())
      read_divisions(*v, r);
    if (const auto v = settings.get("PYTORCH_CUDA_ALLOC_CONF"); v && v->text())
      read_conf_text(*v->text(), r);
    snapshot_.settings = std::move(r);
  }

  static void read_divisions(const View& by_size, RecordedSettings& r) {
    std::array<std::uint32_t, 16> table{};
    by_size.for_each_entry([&](std::string_view key, const View& value) {
      std::uint64_t mb = 0;
      for (const char c : key)
        mb = c >= '0' && c <= '9' ? mb * 10 + (c - '0') : 0;
      const auto divisions = value.integer();
      if (mb == 0 || (mb & (mb - 1)) != 0 || !divisions || *divisions < 0) return;
      table[std::min<std::size_t>(std::bit_width(mb) - 1, table.size() - 1)] =
          static_cast<std::uint32_t>(*divisions);
    });
    if (std::all_of(table.begin(), table.end(), [&](std::uint32_t d) { return d == table[0]; })) {
      r.options["roundup_power2_divisions"] = std::int64_t{table[0]};
      return;
    }
    ChoiceList by_interval;
    for (const std::uint32_t d : table)
      by_interval.push_back(std::to_string(d));
    r.options["roundup_power2_divisions"] = std::move(by_interval);
  }

  // The keys of PYTORCH_CUDA_ALLOC_CONF that the structured settings do not carry.
  static void read_conf_text(std::string_view conf, RecordedSettings& r) {
    const auto megabytes = [&](std::string_view key) -> std::optional<std::uint64_t> {
      const auto at = conf.find(key);
      if (at == std::string_view::npos) return std::nullopt;
      std::uint64_t mb = 0;
      bool digits = false;
      for (std::size_t i = at + key.size(); i < conf.size() && conf[i] >= '0' && conf[i] <= '9';
           ++i, digits = true)
        mb = mb * 10 + static_cast<std::uint64_t>(conf[i] - '0');
      return digits && mb < (1ULL << 40U) ? std::optional(mb << 20U) : std::nullopt;
    };
    if (const auto bytes = megabytes("max_non_split_rounding_mb:"))
      r.options["max_non_split_rounding"] = Bytes{*bytes};
    if (const auto bytes = megabytes("large_segment_size_mb:"))
      r.options["large_segment_size"] = Bytes{*bytes};
    if (conf.find("backend:cudaMallocAsync") != std::string_view::npos)
      r.options["backend"] = std::string("async");
  }

  const std::filesystem::path& path_;
  DeviceAsked asked_;
  std::uint32_t device_ = 0;  // the one read
  StopPoll& poll_;
  Snapshot snapshot_;
  std::unordered_map<std::string, std::uint32_t> stack_ids_;
};

// Read in blocks, polling between them: a snapshot can be gigabytes. The array is sized once to
// the file, not zeroed first (growing a string block by block copied it at every doubling).
LargeArray<char> read_file(const std::filesystem::path& path, StopPoll& poll) {
  std::ifstream file = open_trace(path);
  std::error_code ec;
  const std::uintmax_t expected = std::filesystem::file_size(path, ec);
  LargeArray<char> content(ec ? 0 : static_cast<std::size_t>(expected));
  constexpr std::size_t kBlock = 1U << 20U;
  std::size_t size = 0;
  for (;;) {
    poll.now();
    if (size == content.size()) {
      if (file.peek() == std::ifstream::traits_type::eof()) break;
      content.resize(size + kBlock);  // past the size it had: it grew, or it has no size
    }
    const std::size_t want = std::min(kBlock, content.size() - size);
    file.read(content.data() + size, static_cast<std::streamsize>(want));
    size += static_cast<std::size_t>(file.gcount());
    loading::bytes_read(size);
    if (!file) break;
  }
  content.resize(size);
  if (file.bad()) {
    throw Error(ErrorKind::input, fmt::format("{}: cannot read the trace", path.string()));
  }
  return content;
}

Snapshot read_json(const std::filesystem::path& path, std::string_view text,
                   const DeviceAsked& device, StopPoll& poll) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(
        text,
        [&poll](int /*depth*/, nlohmann::json::parse_event_t /*event*/, nlohmann::json& /*value*/) {
          poll();
          return true;  // keep every value
        });
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos)
      what = what.substr(close + 2);
    throw Error(ErrorKind::input, fmt::format("{}: byte {}: {}", path.string(), e.byte, what));
  } catch (const nlohmann::json::exception& e) {  // a number past any type (out_of_range), ...
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos)
      what = what.substr(close + 2);
    throw Error(ErrorKind::input, fmt::format("{}: {}", path.string(), what));
  }
  return SnapshotReader<JsonView>(path, device, poll).read(JsonView{&doc});
}

// The snapshot in `content` (a string, or a file's bytes): its JSON dump, or the pickle.
template <typename Bytes>
Trace parse_snapshot(const std::filesystem::path& path, Bytes content, Level level,
                     const DeviceAsked& device, StopPoll& poll) {
  const std::string_view all(content.data(), content.size());
  const std::string_view text = all.starts_with("\xEF\xBB\xBF")
                                    ? all.substr(3)  // a byte-order mark
                                    : all;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const Snapshot snapshot = read_json(path, all, device, poll);
    poll.now();
    return build_pytorch_trace(path, snapshot, level);
  }
  const pickle::Document doc = pickle::Document::read(std::move(content), path.string(), poll);
  const Snapshot snapshot =
      SnapshotReader<PickleView>(path, device, poll).read(PickleView{&doc, &doc.root()});
  poll.now();
  return build_pytorch_trace(path, snapshot, level);
}

}  // namespace

Trace load_pytorch_snapshot(const std::filesystem::path& path, Level level,
                            const DeviceAsked& device, StopPoll poll) {
  LargeArray<char> content = read_file(path, poll);
  return parse_snapshot(path, std::move(content), level, device, poll);
}

Trace parse_pytorch_snapshot(const std::filesystem::path& path, std::string content, Level level,
                             const DeviceAsked& device, StopPoll poll) {
  return parse_snapshot(path, std::move(content), level, device, poll);
}

}  // namespace oomlab::torch
