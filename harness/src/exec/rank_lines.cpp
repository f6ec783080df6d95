#include "exec/rank_lines.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

namespace oomlab {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// The number at `at` (digits only, at most 6 of them); its end in `end`.
std::optional<int> number_at(std::string_view text, std::size_t at, std::size_t* end = nullptr) {
  std::size_t i = at;
  int value = 0;
  while (i < text.size() && is_digit(text[i]) && i - at < 6)
    value = value * 10 + (text[i++] - '0');
  if (i == at) return std::nullopt;
  if (end != nullptr) *end = i;
  return value;
}

// The number after the first `key`, spaces skipped.
std::optional<int> number_after(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + key.size();
  while (i < text.size() && text[i] == ' ')
    ++i;
  return number_at(text, i);
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// "  rank      : 1 (local_rank: 1)" -> "1 (local_rank: 1)" when the field is `name`.
std::optional<std::string_view> field(std::string_view line, std::string_view name) {
  const std::string_view t = trimmed(line);
  if (!t.starts_with(name)) return std::nullopt;
  const std::size_t colon = t.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  if (!trimmed(t.substr(name.size(), colon - name.size())).empty()) return std::nullopt;
  return trimmed(t.substr(colon + 1));
}

}  // namespace

RankMark read_rank_marks(std::string_view line) {
  RankMark mark{.text = line};
  for (int marks = 0; marks < 4; ++marks) {
    const std::string_view t = mark.text;
    if (t.size() < 4 || t.front() != '[') break;
    std::size_t i = 1;
    while (i < t.size() && is_letter(t[i]))
      ++i;
    std::size_t end = 0;
    const std::optional<int> n = i > 1 ? number_at(t, i, &end) : std::nullopt;
    if (!n || end + 1 >= t.size() || t[end] != ']' || t[end + 1] != ':') break;
    (t.substr(1, i - 1) == "rank" ? mark.rank : mark.local_rank) = *n;
    mark.text = t.substr(end + 2);
    if (!mark.text.empty() && mark.text.front() == ' ') mark.text.remove_prefix(1);
  }
  return mark;
}

std::optional<int> oom_line_device(std::string_view line) {
  if (line.find("out of memory") == std::string_view::npos &&
      line.find("would exceed allowed memory") == std::string_view::npos)
    return std::nullopt;
  for (const std::string_view key : {"GPU ", "Allocation on device "}) {
    std::size_t from = 0;
    while ((from = line.find(key, from)) != std::string_view::npos) {
      std::size_t end = 0;
      const std::optional<int> n = number_at(line, from + key.size(), &end);
      from += key.size();
      if (!n || end >= line.size()) continue;
      const std::string_view rest = line.substr(end);
      if (rest.starts_with(" has a total capacity") || rest.starts_with(";") ||
          rest.starts_with(" would exceed"))
        return n;
    }
  }
  return std::nullopt;
}

void TorchrunReport::feed_line(std::string_view line) {
  const std::string_view t = trimmed(line);
  if (t.starts_with("Root Cause (first observed failure)")) {
    in_root_ = true;
    in_failure_ = false;
    return;
  }
  if (t == "Failures:") {
    in_root_ = false;
    return;
  }
  if (t.size() >= 4 && t.front() == '[' && t.back() == ':' && t[t.size() - 2] == ']' &&
      number_at(t, 1)) {
    failures_.push_back({.root_cause = in_root_});
    in_failure_ = true;
    return;
  }
  if (!in_failure_ || failures_.empty()) return;
  TorchrunFailure& f = failures_.back();
  if (const auto v = field(line, "rank")) {
    if (const auto r = number_at(*v, 0)) f.rank = *r;
    f.local_rank = number_after(*v, "local_rank:");
  } else if (const auto e = field(line, "exitcode")) {
    const bool negative = e->starts_with("-");
    if (const auto code = number_at(*e, negative ? 1 : 0)) f.exit_code = negative ? -*code : *code;
    f.pid = number_after(*e, "pid:");
  } else if (const auto file = field(line, "error_file")) {
    f.error_file = *file == "<N/A>" ? std::string() : std::string(*file);
  } else if (const auto time = field(line, "time")) {
    f.time = std::string(*time);
  } else if (field(line, "traceback")) {
    in_failure_ = false;  // what follows is the failure's traceback
  }
}

const TorchrunFailure* TorchrunReport::root_cause() const {
  for (const TorchrunFailure& f : failures_) {
    if (f.root_cause) return &f;
  }
  return nullptr;
}

std::optional<ElasticErrorFile> read_elastic_error_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("message")) return std::nullopt;
  const nlohmann::json& message = doc["message"];
  ElasticErrorFile file;
  const auto seconds = [](const nlohmann::json& v) -> std::optional<std::int64_t> {
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() < 19)
        return std::stoll(s);
    }
    return std::nullopt;
  };
  if (message.is_string()) {
    file.message = message.get<std::string>();
    if (doc.contains("timestamp")) file.timestamp = seconds(doc["timestamp"]);
    return file;
  }
  if (!message.is_object()) return std::nullopt;
  if (message.contains("message") && message["message"].is_string())
    file.message = message["message"].get<std::string>();
  if (message.contains("extraInfo") && message["extraInfo"].is_object() &&
      message["extraInfo"].contains("timestamp"))
    file.timestamp = seconds(message["extraInfo"]["timestamp"]);
  return file;
}

}  // namespace oomlab
