#include "pytorch/exec/torchrun.hpp"

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "exec/rank_lines.hpp"

namespace oomlab::torch {

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
  LauncherFailure& f = failures_.back();
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

Launcher torchrun() {
  return {
      .name = "torchrun",
      .report = [] { return std::unique_ptr<LauncherReport>(std::make_unique<TorchrunReport>()); },
      .error_message = [](const std::filesystem::path& file) -> std::optional<std::string> {
        const std::optional<ElasticErrorFile> read = read_elastic_error_file(file);
        if (!read) return std::nullopt;
        return read->message;
      },
      .global_mark = "torch.distributed's traceback mark, the global rank",
      .local_mark = "torchrun --tee"};
}

}  // namespace oomlab::torch
