#include "jax/trace/xla_log_pools.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "jax/trace/xla_log_line.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "trace/importers.hpp"
#include "trace/stop_poll.hpp"

namespace oomlab::jax {
namespace {

// "GPU_<device>_bfc".
bool is_device_pool(std::string_view name) {
  if (!name.starts_with("GPU_") || !name.ends_with("_bfc") || name.size() <= 8) return false;
  return digits(name.substr(4, name.size() - 8)).has_value();
}

// The device pools the log has requests or buffers of ("AllocateRaw GPU_1_bfc ...",
// "[mem-debug] AllocateRaw,GPU_1_bfc,..."), with how many lines each; how many of its lines are
// log lines at all, and the first that holds a NUL byte (0: none), which no text log does.
struct LogPools {
  std::map<std::string, std::uint64_t, std::less<>> pools;
  std::uint64_t log_lines = 0;
  std::uint64_t first_nul_line = 0;
};

// "AllocateRaw GPU_1_bfc ..." or "[mem-debug] AllocateRaw,GPU_1_bfc,...": the pool's name.
std::optional<std::string_view> allocation_pool(std::string_view message) {
  constexpr std::string_view kAnswer = "[mem-debug] ";
  if (message.starts_with(kAnswer)) message.remove_prefix(kAnswer.size());
  if (!message.starts_with("AllocateRaw")) return std::nullopt;
  message.remove_prefix(11);
  if (message.empty() || (message[0] != ',' && message[0] != ' ')) return std::nullopt;
  message.remove_prefix(1);
  return message.substr(0, message.find_first_of(", "));
}

LogPools device_pools(const std::filesystem::path& path, const trace::LoadOptions& options) {
  std::ifstream file = trace::open_trace(path);
  trace::StopPoll poll(options.check_stop);
  LogPools found;
  std::string line;
  for (std::uint64_t number = 1; std::getline(file, line); ++number) {
    poll();
    if (found.first_nul_line == 0 && line.find('\0') != std::string::npos)
      found.first_nul_line = number;
    const std::optional<LogLine> log = read_log_line(line);
    if (!log) continue;
    ++found.log_lines;
    const std::optional<std::string_view> name = allocation_pool(log->message);
    if (name && is_device_pool(*name)) ++found.pools[std::string(*name)];
  }
  return found;
}

// Error(input): the log holds no allocation of a device pool, saying whether it is a log at all.
[[noreturn]] void no_device_pool(const std::filesystem::path& path, const LogPools& found) {
  if (found.log_lines == 0 && found.first_nul_line != 0) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not XLA's allocator log: a binary file (a NUL byte on line {}), "
                            "where XLA's log is lines of text",
                            path.string(), found.first_nul_line));
  }
  if (found.log_lines == 0) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not XLA's allocator log: no line begins with absl's prefix "
                            "(\"I1129 02:43:58.030495     492 bfc_allocator.cc:333] \") or "
                            "TensorFlow's (\"2026-11-29 02:43:58.030495: I \")",
                            path.string()));
  }
  throw Error(ErrorKind::input,
              fmt::format("{}: no allocation of XLA's device pool (GPU_0_bfc) in the log: was "
                          "it written with TF_CPP_VMODULE=bfc_allocator=4 and "
                          "TF_CPP_MIN_LOG_LEVEL=0?",
                          path.string()));
}

}  // namespace

// The device's that options.device names, else the one device's the log holds; several are
// refused, naming them, as a snapshot of several devices is.
std::string pool_to_read(const std::filesystem::path& path, const trace::LoadOptions& options) {
  const LogPools found = device_pools(path, options);
  const auto& pools = found.pools;
  if (pools.empty()) no_device_pool(path, found);
  std::vector<std::string> held;
  std::vector<std::string> flags;
  for (const auto& [name, lines] : pools) {
    held.push_back(fmt::format("{} ({} line{})", name, format_count(lines), lines == 1 ? "" : "s"));
    flags.push_back(fmt::format("{}{}", options.device_option, name.substr(4, name.size() - 8)));
  }
  if (options.device) {
    std::string name = fmt::format("GPU_{}_bfc", *options.device);
    if (pools.contains(name)) return name;
    throw Error(ErrorKind::input,
                fmt::format("{}: no allocation of device {}'s pool ({}) in the log; it holds {}",
                            path.string(), *options.device, name, fmt::join(held, ", ")));
  }
  if (pools.size() == 1) return pools.begin()->first;
  throw Error(ErrorKind::input,
              fmt::format("{}: the log holds XLA's pools of several devices, {}: name the one to "
                          "read ({})",
                          path.string(), fmt::join(held, ", "), fmt::join(flags, " or ")));
}

}  // namespace oomlab::jax
