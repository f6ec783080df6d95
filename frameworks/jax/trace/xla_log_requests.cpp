#include "jax/trace/xla_log_requests.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::jax {

PendingRequests::PendingRequests(const std::filesystem::path& path, std::string_view pool)
    : path_(path), pool_(pool) {
}

void PendingRequests::ask(std::optional<std::uint64_t> thread, const Request& request) {
  if (!thread) {
    by_size_.emplace(request.bytes, request);
    return;
  }
  given_up_.erase(*thread);
  const auto [it, first] = by_thread_.try_emplace(*thread, request);
  if (first) return;
  throw Error(ErrorKind::input,
              fmt::format("{}:{}: a request of {} ({} B) has no result (\"[mem-debug] "
                          "AllocateRaw,{},...\") before its thread {} asks again on line {}: "
                          "were the log's result lines left out?",
                          path_.string(), it->second.line, pool_, format_count(it->second.bytes),
                          pool_, *thread, request.line));
}

std::optional<Request> PendingRequests::give_up(std::uint64_t thread) {
  const auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return std::nullopt;
  const Request request = it->second;
  by_thread_.erase(it);
  given_up_.insert(thread);
  return request;
}

PendingRequests::Answered PendingRequests::answer(std::optional<std::uint64_t> thread,
                                                  std::uint64_t bytes) {
  if (!thread) {
    const auto it = by_size_.lower_bound(bytes);
    if (it == by_size_.end() || it->first != bytes) return {};
    const Request request = it->second;
    by_size_.erase(it);
    return {.request = request};
  }
  if (given_up_.erase(*thread) > 0) return {.given_up = true};
  const auto it = by_thread_.find(*thread);
  if (it == by_thread_.end()) return {};
  const Request request = it->second;
  by_thread_.erase(it);
  return {.request = request};
}

void PendingRequests::check_all_answered() const {
  const Request* first = nullptr;
  for (const auto& [thread, request] : by_thread_) {
    if (first == nullptr || request.line < first->line) first = &request;
  }
  for (const auto& [bytes, request] : by_size_) {
    if (first == nullptr || request.line < first->line) first = &request;
  }
  if (first == nullptr) return;
  throw Error(ErrorKind::input,
              fmt::format("{}:{}: the log ends before this request of {} ({} B) has its result: "
                          "was the file cut off?",
                          path_.string(), first->line, pool_, format_count(first->bytes)));
}

}  // namespace oomlab::jax
