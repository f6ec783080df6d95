#include "jax/trace/xla_remat.hpp"

#include <fstream>
#include <string>
#include <unordered_map>

#include "jax/trace/xla_log_line.hpp"

namespace oomlab::jax {

namespace {

// The digits of "(<digits> bytes)" after `key`, from `from`; `from` moves past them.
std::optional<std::uint64_t> bytes_after(std::string_view text, std::string_view key,
                                         std::size_t& from) {
  const std::size_t at = text.find(key, from);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t open = text.find(" (", at + key.size());
  const std::size_t close = open == std::string_view::npos ? open : text.find(' ', open + 2);
  if (close == std::string_view::npos || text.substr(close, 7) != " bytes)") return std::nullopt;
  from = close;
  return digits(text.substr(open + 2, close - open - 2));
}

// The bytes a refusal line says the pool rounded the request to, or none for any other line.
std::optional<std::uint64_t> refused_bytes(std::string_view message) {
  constexpr std::string_view kRefused = "ran out of memory trying to allocate ";
  constexpr std::string_view kRounded = "(rounded to ";
  if (message.find(kRefused) == std::string_view::npos) return std::nullopt;
  const std::size_t at = message.find(kRounded);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t end = message.find(')', at);
  if (end == std::string_view::npos) return std::nullopt;
  return digits(message.substr(at + kRounded.size(), end - at - kRounded.size()));
}

}  // namespace

std::optional<RematShortfall> read_remat_warning(std::string_view message) {
  if (!message.starts_with("Can't reduce memory use below ")) return std::nullopt;
  std::size_t from = 0;
  const auto target = bytes_after(message, "below ", from);
  const auto reduced = bytes_after(message, "only reduced to ", from);
  const auto original = bytes_after(message, "down from ", from);
  if (!target || !reduced || !original) return std::nullopt;
  return RematShortfall{
      .target_bytes = *target, .reduced_bytes = *reduced, .original_bytes = *original};
}

std::optional<RematShortfall> remat_shortfall(const std::filesystem::path& stderr_file,
                                              std::uint64_t request_bytes) {
  constexpr std::uint64_t kRounding = 256;  // the BFC allocator's least chunk
  std::ifstream in(stderr_file);
  std::unordered_map<std::uint64_t, RematShortfall> last;  // by thread
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    const std::optional<LogLine> line = read_log_line(text);
    if (!line || !line->thread_known) continue;
    if (std::optional<RematShortfall> warned = read_remat_warning(line->message)) {
      warned->line = number;
      last[line->thread] = *warned;
      continue;
    }
    const std::optional<std::uint64_t> refused = refused_bytes(line->message);
    if (!refused || *refused < request_bytes || *refused - request_bytes >= kRounding) continue;
    const auto it = last.find(line->thread);
    if (it == last.end()) return std::nullopt;
    return it->second;
  }
  return std::nullopt;
}

}  // namespace oomlab::jax
