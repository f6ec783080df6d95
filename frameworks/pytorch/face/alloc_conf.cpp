#include "pytorch/face/alloc_conf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "cli/parse.hpp"
#include "oomlab/error.hpp"

namespace oomlab::torch {

using namespace oomlab::cli;  // the engine's cli types, which it works in

namespace {

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_items(std::string_view list) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const std::string_view item = trimmed(list.substr(start, i - start));
      if (!item.empty()) items.push_back(item);
      start = i + 1;
    }
  }
  return items;
}

std::uint64_t whole_number(std::string_view key, std::string_view value, std::string_view flag) {
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) {
    throw_usage(fmt::format("{}: {}:{}: PyTorch takes a whole number here", flag, key, value));
  }
  return n;
}

// roundup_power2_divisions: N, or PyTorch's per-size list; the model takes one N for all sizes.
std::string divisions(std::string_view value, std::string_view flag) {
  if (!value.starts_with('[')) return std::string(value);
  std::string common;
  for (std::string_view item : split_items(value.substr(1, value.size() - 2))) {
    const std::string step(trimmed(item.substr(item.find(':') + 1)));
    if (!common.empty() && step != common) {
      throw_usage(fmt::format(
          "{}: roundup_power2_divisions:{}: different divisions per size are not modelled from "
          "the command line; give one number",
          flag, value));
    }
    common = step;
  }
  return common;
}

std::string translated(std::string_view key, std::string_view value, std::string_view flag) {
  const std::string v = lowered(value);
  if (key == "expandable_segments") {
    if (v != "true" && v != "false") {
      throw_usage(
          fmt::format("{}: expandable_segments:{}: PyTorch takes True or False", flag, value));
    }
    return fmt::format("expandable_segments={}", v == "true" ? "on" : "off");
  }
  if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
    return fmt::format("{}={}MiB", key.substr(0, key.size() - 3), whole_number(key, value, flag));
  }
  if (key == "garbage_collection_threshold") return fmt::format("{}={}", key, value);
  if (key == "roundup_power2_divisions") return fmt::format("{}={}", key, divisions(value, flag));
  if (key == "backend") {
    if (v == "cudamallocasync") return "backend=async";
    if (v == "native") return "backend=native";
    throw_usage(fmt::format("{}: backend:{}: PyTorch's backends are native and cudaMallocAsync",
                            flag, value));
  }
  return {};
}

constexpr std::array kNoDeviceMemory = {
    "release_lock_on_cudamalloc",     "pinned_use_cuda_host_register",
    "pinned_num_register_threads",    "pinned_use_background_threads",
    "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse"};
constexpr std::array kModelled = {"expandable_segments",       "max_split_size_mb",
                                  "max_non_split_rounding_mb", "garbage_collection_threshold",
                                  "roundup_power2_divisions",  "backend"};

}  // namespace

std::vector<std::string> torch_assignments(std::string_view list, std::string_view flag) {
  std::vector<std::string> out;
  for (const std::string_view item : split_items(list)) {
    const auto equals = item.find('=');
    const auto colon = item.find(':');
    if (equals != std::string_view::npos && (colon == std::string_view::npos || equals < colon)) {
      out.emplace_back(item);  // oomlab's own spelling
      continue;
    }
    if (colon == std::string_view::npos) {
      throw_usage(fmt::format("{}: '{}': expected PyTorch's key:value or key=value", flag, item));
    }
    const std::string_view key = trimmed(item.substr(0, colon));
    const std::string_view value = trimmed(item.substr(colon + 1));
    if (std::find(kNoDeviceMemory.begin(), kNoDeviceMemory.end(), key) != kNoDeviceMemory.end())
      continue;
    std::string option = translated(key, value, flag);
    if (option.empty()) {
      const std::vector<std::string> known(kModelled.begin(), kModelled.end());
      throw_usage(
          fmt::format("{}: '{}' is not a PyTorch allocator setting oomlab models{} "
                      "(known: {})",
                      flag, key, did_you_mean(key, known), fmt::join(known, ", ")));
    }
    out.push_back(std::move(option));
  }
  return out;
}

}  // namespace oomlab::torch
