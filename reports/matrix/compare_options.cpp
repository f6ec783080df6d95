// Cells that differ only in their allocator's options: a baseline cell missing from the current and
// an added one, the same in scenario, allocator, params and budget, named with the options that
// differ (as `--allocator` spells their values), so that their two rows do not read as one cell;
// and a program cell's label, which names its frameworks' versions (both, where they differ).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "allocators/backends.hpp"
#include "reports/matrix/compare.hpp"

namespace oomlab {

using plain_json = nlohmann::json;  // unordered: its keys sorted

namespace {

constexpr std::string_view kNotSet = "(not set)";

plain_json without_options(const plain_json& key) {
  plain_json out = matching_key(key);
  if (out.is_object()) out.erase("options");
  return out;
}

// 4194304 -> "4MiB" for a size option, true -> "on": what a user would type after '='.
std::string option_text(const std::string& allocator, const std::string& option,
                        const plain_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "on" : "off";
  if (const BackendInfo* backend = find_backend(allocator);
      backend != nullptr && value.is_number_unsigned()) {
    for (const ParamDef& d : backend->options) {
      if (d.name == option && d.type == ParamType::bytes)
        return format_param_value(Bytes{value.get<std::uint64_t>()});
    }
  }
  return value.dump();
}

plain_json options_of(const plain_json& key) {
  const auto it = key.find("options");
  return it != key.end() && it->is_object() ? *it : plain_json::object();
}

// Every option set on either side with another value (or on one side only), baseline's order.
std::vector<OptionDifference> differences(const plain_json& baseline_key,
                                          const plain_json& current_key) {
  const plain_json b = options_of(baseline_key);
  const plain_json c = options_of(current_key);
  const std::string allocator = baseline_key.value("allocator", std::string());
  const auto text = [&](const plain_json& options, const std::string& name) {
    const auto it = options.find(name);
    return it == options.end() ? std::string(kNotSet) : option_text(allocator, name, *it);
  };
  std::vector<OptionDifference> out;
  for (const auto& [name, value] : b.items()) {
    if (c.contains(name) && c[name] == value) continue;
    out.push_back({name, text(b, name), text(c, name)});
  }
  for (const auto& [name, value] : c.items()) {
    if (!b.contains(name)) out.push_back({name, std::string(kNotSet), text(c, name)});
  }
  return out;
}

std::string option_assignment(const std::string& option, const std::string& value) {
  return value == kNotSet ? fmt::format("{} not set", option) : fmt::format("{}={}", option, value);
}

}  // namespace

void pair_option_differences(std::vector<CellVerdict>& cells) {
  std::vector<bool> paired(cells.size(), false);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].verdict != Verdict::missing) continue;
    const plain_json key = without_options(cells[i].baseline->key);
    for (std::size_t j = 0; j < cells.size(); ++j) {
      CellVerdict& added = cells[j];
      if (paired[j] || added.baseline || !added.current) continue;
      if (without_options(added.current->key) != key) continue;
      std::vector<OptionDifference> d = differences(cells[i].baseline->key, added.current->key);
      if (d.empty()) continue;
      paired[j] = true;
      cells[i].options_differ = d;
      added.options_differ = std::move(d);
      const std::string text = options_differ_text(added);
      cells[i].reason += "; " + text;
      added.reason += "; " + text;
      break;
    }
  }
}

std::string options_differ_text(const CellVerdict& verdict) {
  if (verdict.options_differ.empty()) return "";
  std::vector<std::string> baseline;
  std::vector<std::string> current;
  for (const OptionDifference& d : verdict.options_differ) {
    baseline.push_back(option_assignment(d.option, d.baseline));
    current.push_back(option_assignment(d.option, d.current));
  }
  return fmt::format("options differ: {} (baseline) vs {} (current)", fmt::join(baseline, ", "),
                     fmt::join(current, ", "));
}

std::string frameworks_text(const std::vector<FrameworkSeen>& frameworks) {
  std::vector<std::string> parts;
  parts.reserve(frameworks.size());
  for (const FrameworkSeen& f : frameworks) {
    parts.push_back(f.allocator_settings.empty()
                        ? fmt::format("{} {}", f.name, f.version)
                        : fmt::format("{} {} ({})", f.name, f.version, f.allocator_settings));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string CellVerdict::allocator_label() const {
  const CompareCell& c = cell();
  std::vector<std::string> shown;
  for (const OptionDifference& d : options_differ) {
    const std::string text = option_assignment(d.option, baseline ? d.baseline : d.current);
    // A matrix's label is the allocator as asked ("sim:page=4MiB"): it may say it already.
    if (c.allocator.find(text) == std::string::npos) shown.push_back(text);
  }
  // A program cell names its framework: both versions where the two sides ran different ones.
  const std::string before = baseline ? frameworks_text(baseline->frameworks) : "";
  const std::string after = current ? frameworks_text(current->frameworks) : "";
  if (before != after && baseline && current) {
    shown.push_back(fmt::format("{} → {}", before.empty() ? "(none seen)" : before,
                                after.empty() ? "(none seen)" : after));
  } else if (!(before.empty() ? after : before).empty()) {
    shown.push_back(before.empty() ? after : before);
  }
  if (shown.empty()) return c.allocator;
  return fmt::format("{} ({})", c.allocator, fmt::join(shown, ", "));
}

}  // namespace oomlab
