#include "jax/trace/xla_dump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

namespace oomlab::jax {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kAssignment = "-buffer-assignment.txt";
constexpr std::string_view kLiveRange = "-live-range.txt";

std::optional<std::uint64_t> number_after(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* first = text.data() + at + key.size();
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), value);
  if (ec != std::errc() || end == first) return std::nullopt;
  return value;
}

// A quoted field of an instruction's metadata (`key` ends in `="`), its escapes undone.
std::string quoted_after(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return {};
  std::string out;
  for (std::size_t i = at + key.size(); i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

std::string_view trimmed(std::string_view line) {
  const std::size_t first = line.find_first_not_of(' ');
  return first == std::string_view::npos ? std::string_view{} : line.substr(first);
}

// The size of the module's preallocated-temp allocation, if it has one.
std::optional<std::uint64_t> temp_of(const fs::path& assignment) {
  std::ifstream in(assignment);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("allocation ") && line.find("preallocated-temp") != std::string::npos)
      return number_after(line, " size ");
  }
  return std::nullopt;
}

// "Live ranges at 454 (peak):" and the lines after it, "name{index}: 524288000 bytes (...)".
std::vector<std::pair<std::string, std::uint64_t>> peak_values(const fs::path& live_range) {
  std::vector<std::pair<std::string, std::uint64_t>> values;
  std::ifstream in(live_range);
  bool in_peak = false;
  for (std::string line; std::getline(in, line);) {
    const std::string_view text = trimmed(line);
    if (!in_peak) {
      in_peak = text.starts_with("Live ranges at ") && text.ends_with("(peak):");
      continue;
    }
    const std::size_t brace = text.rfind('{', text.find(": "));
    const std::optional<std::uint64_t> bytes = number_after(text, "}: ");
    if (brace == std::string_view::npos || !bytes) break;
    values.emplace_back(std::string(text.substr(0, brace)), *bytes);
  }
  return values;
}

struct Instruction {
  std::string op_name;
  // "block_apply (/x/lm.py:45)" (older metadata: "/x/lm.py:45"), "" where it names no line
  std::string place;
  std::uint32_t frame = 0;
  bool parameter = false;
};

// The HLO text's stack-frame tables and the instructions named in `wanted`.
class HloText {
 public:
  HloText(const fs::path& path, const std::set<std::string, std::less<>>& wanted);
  [[nodiscard]] const Instruction* find(const std::string& name) const {
    const auto it = instructions_.find(name);
    return it == instructions_.end() ? nullptr : &it->second;
  }
  // A frame and its callers, innermost first.
  [[nodiscard]] std::vector<std::string> chain(std::uint32_t frame) const;

 private:
  void table_entry(std::string_view table, std::string_view line);
  void instruction(std::string_view line, const std::set<std::string, std::less<>>& wanted);
  [[nodiscard]] std::string place_of(std::uint32_t location) const;

  struct Location {
    std::uint64_t file = 0, function = 0, line = 0;
  };
  std::map<std::uint64_t, std::string> files_, functions_;
  std::map<std::uint64_t, Location> locations_;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>> frames_;  // location, parent
  bool parent_shifted_ = false;  // XLA prints a frame's parent one past its id (a root itself)
  bool in_entry_ = false;        // in the ENTRY computation, whose parameters are the step's
  std::map<std::string, Instruction, std::less<>> instructions_;
};

HloText::HloText(const fs::path& path, const std::set<std::string, std::less<>>& wanted) {
  std::ifstream in(path);
  std::string table;
  for (std::string line; std::getline(in, line);) {
    if (line == "FileNames" || line == "FunctionNames" || line == "FileLocations" ||
        line == "StackFrames") {
      table = line;
    } else if (line.empty()) {
      table.clear();
    } else if (!table.empty()) {
      table_entry(table, line);
    } else if (line.starts_with("ENTRY ")) {
      in_entry_ = true;
    } else if (line == "}") {
      in_entry_ = false;
    } else {
      instruction(line, wanted);
    }
  }
  for (auto& [name, instruction] : instructions_) {
    if (instruction.place.empty() && instruction.frame != 0) {
      const std::vector<std::string> frames = chain(instruction.frame);
      if (!frames.empty()) instruction.place = frames.front();
    }
  }
}

void HloText::table_entry(std::string_view table, std::string_view line) {
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
  if (ec != std::errc()) return;
  const std::string_view rest(end, line.data() + line.size() - end);
  if (table == "FileNames") {
    files_[id] = quoted_after(rest, "\"");
  } else if (table == "FunctionNames") {
    functions_[id] = quoted_after(rest, "\"");
  } else if (table == "FileLocations") {
    locations_[id] = {.file = number_after(rest, "file_name_id=").value_or(0),
                      .function = number_after(rest, "function_name_id=").value_or(0),
                      .line = number_after(rest, " line=").value_or(0)};
  } else {
    const auto parent =
        static_cast<std::uint32_t>(number_after(rest, "parent_frame_id=").value_or(0));
    frames_[static_cast<std::uint32_t>(id)] = {number_after(rest, "file_location_id=").value_or(0),
                                               parent};
    if (parent == id) parent_shifted_ = true;
  }
}

void HloText::instruction(std::string_view line, const std::set<std::string, std::less<>>& wanted) {
  std::string_view text = trimmed(line);
  if (text.starts_with("ROOT ")) text.remove_prefix(5);
  if (text.starts_with('%')) text.remove_prefix(1);
  const std::size_t equals = text.find(" = ");
  if (equals == std::string_view::npos) return;
  const std::string_view name = text.substr(0, equals);
  if (!wanted.contains(name)) return;
  Instruction& i = instructions_[std::string(name)];
  const std::size_t metadata = text.find("metadata={");
  const std::string_view head = text.substr(0, metadata);
  i.parameter = in_entry_ && head.find(" parameter(") != std::string_view::npos;
  if (metadata == std::string_view::npos) return;
  const std::string_view meta = text.substr(metadata);
  i.op_name = quoted_after(meta, "op_name=\"");
  i.frame = static_cast<std::uint32_t>(number_after(meta, "stack_frame_id=").value_or(0));
  // Older metadata names the file and line itself, without the function.
  const std::string file = quoted_after(meta, "source_file=\"");
  if (const auto at = number_after(meta, "source_line="); i.frame == 0 && !file.empty() && at)
    i.place = fmt::format("{}:{}", file, *at);
}

std::string HloText::place_of(std::uint32_t location) const {
  const auto it = locations_.find(location);
  if (it == locations_.end()) return {};
  const auto file = files_.find(it->second.file);
  const auto function = functions_.find(it->second.function);
  if (file == files_.end()) return {};
  return fmt::format("{} ({}:{})", function == functions_.end() ? "?" : function->second,
                     file->second, it->second.line);
}

std::vector<std::string> HloText::chain(std::uint32_t frame) const {
  std::vector<std::string> out;
  while (frame != 0) {
    const auto it = frames_.find(frame);
    if (it == frames_.end()) break;
    std::string place = place_of(static_cast<std::uint32_t>(it->second.first));
    if (!place.empty()) out.push_back(std::move(place));
    std::uint32_t parent = it->second.second;
    if (parent_shifted_ && parent > 0) --parent;
    if (parent >= frame) break;  // a caller's frame comes before its callee's
    frame = parent;
  }
  return out;
}

// The function a module was compiled from: "jit_train_step" -> "train_step".
std::string_view function_of(std::string_view module) {
  return module.starts_with("jit_") ? module.substr(4) : module;
}

// The frames of `chain` outside the step's own function: where the program called it.
std::vector<std::string> callers(const std::vector<std::string>& chain, std::string_view module) {
  const std::string_view step = function_of(module);
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const std::string_view function = std::string_view(chain[i]).substr(0, chain[i].find(" ("));
    if (function == step || function.ends_with(fmt::format(".{}", step)))
      return {chain.begin() + static_cast<std::ptrdiff_t>(i) + 1, chain.end()};
  }
  return {};
}

// "params['blocks'][0]['up']" -> "params".
std::string argument_name(const Instruction& i, const std::string& value) {
  const std::string& name = i.op_name.empty() ? value : i.op_name;
  return name.substr(0, name.find('['));
}

void describe(CompiledStep& step, std::size_t most) {
  const auto values =
      peak_values(fs::path(step.hlo).replace_extension().string() + std::string(kLiveRange));
  std::set<std::string, std::less<>> wanted;
  for (const auto& [name, bytes] : values)
    wanted.insert(name);
  const HloText hlo(step.hlo, wanted);
  std::map<std::string, trace::MemoryHolder, std::less<>> by_place;
  for (const auto& [name, bytes] : values) {
    step.peak_bytes += bytes;
    const Instruction* i = hlo.find(name);
    std::string where = name;
    if (i != nullptr && i->parameter) {
      where =
          fmt::format("{} (an argument of {})", argument_name(*i, name), function_of(step.name));
    } else if (i != nullptr && !i->place.empty()) {
      where = i->place;
      // The largest first: its frames name where the program called the step.
      if (step.call_frames.empty()) step.call_frames = callers(hlo.chain(i->frame), step.name);
    } else if (i != nullptr && !i->op_name.empty()) {
      where = i->op_name;
    } else if (i != nullptr) {
      where = "buffers of XLA's own making (layout copies and the like: no line of the program)";
    }
    trace::MemoryHolder& h = by_place[where];
    h.where = where;
    h.bytes += bytes;
    ++h.blocks;
  }
  for (auto& [where, holder] : by_place)
    step.holders.push_back(std::move(holder));
  std::stable_sort(step.holders.begin(), step.holders.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  if (step.holders.size() > most) step.holders.resize(most);
}

// "module_0042.jit_train_step.sm_9.0a_gpu_after_optimizations" -> "jit_train_step".
std::string module_name(const std::string& prefix) {
  const std::size_t first = prefix.find('.');
  const std::size_t second = prefix.find('.', first + 1);
  if (first == std::string::npos) return prefix;
  return prefix.substr(first + 1,
                       second == std::string::npos ? std::string::npos : second - first - 1);
}

}  // namespace

std::optional<CompiledStep> compiled_step(const fs::path& folder, std::uint64_t temp_bytes,
                                          const std::string& executable, std::size_t most) {
  // The modules whose temp is the request, in the order XLA numbered them; the one the message
  // names where it names one.
  std::vector<std::string> prefixes;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.ends_with(kAssignment) && temp_of(it->path()) == temp_bytes)
      prefixes.push_back(file.substr(0, file.size() - kAssignment.size()));
  }
  std::sort(prefixes.begin(), prefixes.end());
  for (const std::string& prefix : prefixes) {
    CompiledStep step{
        .name = module_name(prefix), .hlo = folder / (prefix + ".txt"), .temp_bytes = temp_bytes};
    if ((!executable.empty() && step.name != executable) || !fs::exists(step.hlo, ec)) continue;
    describe(step, most);
    if (!step.holders.empty()) return step;  // none: its live ranges are not as read here
  }
  return std::nullopt;
}

void keep_in_dump(const fs::path& folder, const CompiledStep* step) {
  std::error_code ec;
  std::set<std::string> kept;
  if (step != nullptr) {
    const std::string prefix = step->hlo.stem().string();
    kept = {prefix + ".txt", prefix + std::string(kAssignment), prefix + std::string(kLiveRange)};
  }
  std::vector<fs::path> gone;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.starts_with("module_") && !kept.contains(file)) gone.push_back(it->path());
  }
  for (const fs::path& path : gone)
    fs::remove_all(path, ec);
  fs::remove(folder, ec);  // only where nothing is left in it
}

}  // namespace oomlab::jax
