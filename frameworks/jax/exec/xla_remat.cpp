#include "jax/exec/xla_remat.hpp"

#include <fstream>
#include <string>
#include <unordered_map>

#include "exec/oom_text.hpp"
#include "jax/trace/xla_log_line.hpp"

namespace oomlab::jax {

namespace {

constexpr std::string_view kWarning = "Can't reduce memory use below ";
constexpr std::string_view kRefused = "ran out of memory trying to allocate ";

// The bytes a refusal line says the pool rounded the request to, or none for any other line.
std::optional<std::uint64_t> refused_bytes(std::string_view message) {
  if (!oom_text::contains(message, kRefused)) return std::nullopt;
  return oom_text::size_after(message, "(rounded to ");
}

// The log line of one of those two messages a line of stderr holds: all of it, or its end where
// a progress bar written without a newline came first ("\r 40%|####  | 4/10W1129 01:46:18.421272
// 511 hlo_rematerialization.cc:3363] Can't ..."). None for any other line.
std::optional<LogLine> log_line_in(std::string_view text) {
  std::size_t key = text.find(kWarning);
  if (key == std::string_view::npos) key = text.find(kRefused);
  if (key == std::string_view::npos) return std::nullopt;
  if (std::optional<LogLine> whole = read_log_line(text)) return whole;
  const std::size_t close = text.rfind("] ", key);
  if (close == std::string_view::npos) return std::nullopt;
  // absl's prefix and place: "W1129 01:46:18.421272", the thread, "file.cc:line".
  constexpr std::size_t kLongestHead = 128;
  for (std::size_t p = close; p-- > 0 && close - p <= kLongestHead;) {
    if (std::string_view("IWEF").find(text[p]) == std::string_view::npos) continue;
    if (std::optional<LogLine> line = read_log_line(text.substr(p))) return line;
  }
  return std::nullopt;
}

}  // namespace

std::optional<RematShortfall> read_remat_warning(std::string_view message) {
  if (!message.starts_with(kWarning)) return std::nullopt;
  // Each figure as XLA prints it, "5.64GiB (6057048687 bytes)": the count in parentheses.
  const auto target = oom_text::size_after(message, "below ");
  const auto reduced = oom_text::size_after(message, "only reduced to ");
  const auto original = oom_text::size_after(message, "down from ");
  if (!target || !reduced || !original) return std::nullopt;
  return RematShortfall{
      .target_bytes = *target, .reduced_bytes = *reduced, .original_bytes = *original};
}

std::optional<RematShortfall> remat_shortfall(const std::filesystem::path& stderr_file,
                                              std::uint64_t request_bytes) {
  constexpr std::uint64_t kRounding = 256;  // the BFC allocator's least chunk
  std::ifstream in(stderr_file);
  // The last warning by thread (0 for a line that names none: TensorFlow's default prefix).
  std::unordered_map<std::uint64_t, RematShortfall> last;
  std::optional<RematShortfall> found;
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    const std::optional<LogLine> line = log_line_in(text);
    if (!line) continue;
    const std::uint64_t thread = line->thread_known ? line->thread : 0;
    if (std::optional<RematShortfall> warned = read_remat_warning(line->message)) {
      warned->line = number;
      last[thread] = *warned;
      continue;
    }
    const std::optional<std::uint64_t> refused = refused_bytes(line->message);
    if (!refused || *refused < request_bytes || *refused - request_bytes >= kRounding) continue;
    const auto it = last.find(thread);  // the last refusal of that size is the fatal one
    found = it == last.end() ? std::nullopt : std::optional<RematShortfall>(it->second);
  }
  return found;
}

}  // namespace oomlab::jax
