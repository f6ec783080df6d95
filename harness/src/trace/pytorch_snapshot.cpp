// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot(): a pickle; or the same snapshot
// dumped as JSON) as a trace, from device_traces[device]:
//   tensor level:  alloc (size = requested bytes), free_completed (frees that address)
//   segment level: segment_alloc / segment_map, segment_free / segment_unmap (the driver calls)
//   both:          oom (the request that failed when the program ran)
// Other entries (free_requested, snapshot, ...) are counted as ignored.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"
#include "trace/pickle.hpp"

namespace oomlab::trace {

namespace {

// A node of the unpickled snapshot, with where it came from.
struct PickleView {
  const pickle::Document* doc;
  const pickle::Node* node;

  [[nodiscard]] bool is_dict() const { return node->kind == pickle::Kind::dict; }
  [[nodiscard]] bool is_list() const {
    return node->kind == pickle::Kind::list || node->kind == pickle::Kind::tuple;
  }
  [[nodiscard]] std::optional<PickleView> get(std::string_view key) const {
    const pickle::Node* value = doc->get(*node, key);
    return value == nullptr ? std::nullopt : std::optional<PickleView>(PickleView{doc, value});
  }
  [[nodiscard]] std::size_t size() const { return doc->items(*node).size(); }
  [[nodiscard]] PickleView at(std::size_t i) const {
    return {doc, &doc->node(doc->items(*node)[i])};
  }
  [[nodiscard]] std::optional<std::int64_t> integer() const {
    return node->kind == pickle::Kind::integer ? std::optional(node->integer) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::string_view> text() const {
    return node->kind == pickle::Kind::text ? std::optional(node->text) : std::nullopt;
  }
  [[nodiscard]] std::string where() const { return fmt::format(" (byte {})", node->offset); }
};

struct JsonView {
  const nlohmann::json* value;

  [[nodiscard]] bool is_dict() const { return value->is_object(); }
  [[nodiscard]] bool is_list() const { return value->is_array(); }
  [[nodiscard]] std::optional<JsonView> get(std::string_view key) const {
    const auto it = value->find(key);
    return it == value->end() ? std::nullopt : std::optional<JsonView>(JsonView{&*it});
  }
  [[nodiscard]] std::size_t size() const { return value->size(); }
  [[nodiscard]] JsonView at(std::size_t i) const { return {&(*value)[i]}; }
  [[nodiscard]] std::optional<std::int64_t> integer() const {
    if (value->is_number_unsigned()) {
      const auto u = value->get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INT64_MAX)
                 ? std::optional(static_cast<std::int64_t>(u))
                 : std::nullopt;
    }
    return value->is_number_integer() ? std::optional(value->get<std::int64_t>()) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::string_view> text() const {
    return value->is_string()
               ? std::optional<std::string_view>(value->get_ref<const std::string&>())
               : std::nullopt;
  }
  [[nodiscard]] static std::string where() { return {}; }
};

enum class Action : std::uint8_t {
  tensor_alloc,
  tensor_free,
  segment_alloc,
  segment_free,
  oom,
  other
};

Action classify(std::string_view action) {
  if (action == "alloc") return Action::tensor_alloc;
  if (action == "free_completed") return Action::tensor_free;
  if (action == "segment_alloc" || action == "segment_map") return Action::segment_alloc;
  if (action == "segment_free" || action == "segment_unmap") return Action::segment_free;
  if (action == "oom") return Action::oom;
  return Action::other;
}

std::optional<Op> op_at_level(Action action, Level level) {
  switch (action) {
    case Action::tensor_alloc:
      return level == Level::tensor ? std::optional(Op::alloc) : std::nullopt;
    case Action::tensor_free:
      return level == Level::tensor ? std::optional(Op::free) : std::nullopt;
    case Action::segment_alloc:
      return level == Level::segment ? std::optional(Op::alloc) : std::nullopt;
    case Action::segment_free:
      return level == Level::segment ? std::optional(Op::free) : std::nullopt;
    case Action::oom:
      return Op::failed;
    case Action::other:
      return std::nullopt;
  }
  return std::nullopt;
}

template <typename View>
class SnapshotReader {
 public:
  SnapshotReader(const std::filesystem::path& path, std::uint32_t device)
      : path_(path), device_(device) {}

  [[noreturn]] void fail(const View& at, std::string_view where, std::string_view what) const {
    throw Error(ErrorKind::input,
                fmt::format("{}: {}{}: {}", path_.string(), where, at.where(), what));
  }

  View device_trace(const View& root) const {
    if (!root.is_dict()) fail(root, "the top level", "not a dict: not a PyTorch memory snapshot");
    const auto traces = root.get("device_traces");
    if (!traces)
      fail(root, "the top level",
           "no 'device_traces': not a memory snapshot with its history recorded");
    if (!traces->is_list()) fail(*traces, "device_traces", "not a list");
    if (device_ >= traces->size()) {
      fail(*traces, "device_traces",
           fmt::format("no trace for device {}: the snapshot has {}", device_, traces->size()));
    }
    const View entries = traces->at(device_);
    if (!entries.is_list()) fail(entries, fmt::format("device_traces[{}]", device_), "not a list");
    return entries;
  }

  std::uint64_t field(const View& entry, std::string_view where, std::string_view key,
                      bool required) const {
    const auto value = entry.get(key);
    if (!value) {
      if (required) fail(entry, where, fmt::format("'{}' is missing", key));
      return 0;
    }
    const auto number = value->integer();
    if (!number) fail(*value, where, fmt::format("'{}' is not an integer", key));
    if (*number < 0) fail(*value, where, fmt::format("'{}' is negative ({})", key, *number));
    if (key == "size" && static_cast<std::uint64_t>(*number) > kLargestSize) {
      fail(*value, where, fmt::format("'size' {} is not a size any allocator has", *number));
    }
    return static_cast<std::uint64_t>(*number);
  }

  Trace read(const View& root, Level level) const {
    const View entries = device_trace(root);
    TraceBuilder builder(Format::pytorch, path_);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const View entry = entries.at(i);
      const std::string where = fmt::format("device_traces[{}][{}]", device_, i);
      if (!entry.is_dict()) fail(entry, where, "not a dict");
      const auto action_value = entry.get("action");
      const auto action = action_value ? action_value->text() : std::nullopt;
      if (!action) fail(entry, where, "'action' is missing or not a string");
      const std::optional<Op> op = op_at_level(classify(*action), level);
      if (!op) {
        builder.ignore();
        continue;
      }
      const std::uint64_t size = field(entry, where, "size", true);
      const std::uint64_t address = field(entry, where, "addr", *op != Op::failed);
      builder.add(*op, size, address, field(entry, where, "stream", false), 0,
                  field(entry, where, "time_us", false) * 1000, i, 0);
    }
    return builder.finish();
  }

 private:
  const std::filesystem::path& path_;
  std::uint32_t device_;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file = open_trace(path);
  std::ostringstream content;
  content << file.rdbuf();
  return std::move(content).str();
}

Trace read_json(const std::filesystem::path& path, const std::string& text, Level level,
                std::uint32_t device) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
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
  return SnapshotReader<JsonView>(path, device).read(JsonView{&doc}, level);
}

}  // namespace

Trace load_pytorch_snapshot(const std::filesystem::path& path, Level level, std::uint32_t device) {
  return parse_pytorch_snapshot(path, read_file(path), level, device);
}

Trace parse_pytorch_snapshot(const std::filesystem::path& path, std::string content, Level level,
                             std::uint32_t device) {
  const auto first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && content[first] == '{')
    return read_json(path, content, level, device);
  const pickle::Document doc = pickle::Document::read(std::move(content), path.string());
  return SnapshotReader<PickleView>(path, device).read(PickleView{&doc, &doc.root()}, level);
}

}  // namespace oomlab::trace
