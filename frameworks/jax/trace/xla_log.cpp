#include "jax/trace/xla_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jax/trace/xla_log_line.hpp"
#include "jax/trace/xla_log_pools.hpp"
#include "jax/trace/xla_log_requests.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace_builder.hpp"
#include "oomlab/trace_format.hpp"
#include "trace/importers.hpp"
#include "trace/stop_poll.hpp"

namespace oomlab::jax {
namespace {

using trace::Op;
using trace::Place;

constexpr std::string_view kMemDebug = "[mem-debug] ";
constexpr std::string_view kMemDebugTag = "[mem-debug]";
constexpr std::uint64_t kDayNs = std::uint64_t{86'400} * 1'000'000'000;

// "NAME,BYTES,ADDRESS," after "[mem-debug] AllocateRaw," (or DeallocateRaw,).
struct Fields {
  std::string_view pool;
  std::string_view bytes;
  std::string_view address;
};
std::optional<Fields> comma_fields(std::string_view text) {
  Fields f;
  std::size_t at = 0;
  for (std::string_view* field : {&f.pool, &f.bytes, &f.address}) {
    const std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) return std::nullopt;
    *field = text.substr(at, comma - at);
    at = comma + 1;
  }
  return f;
}

// The pool's set-up line's exact figure: "... 6.00GiB (6444548096 bytes) on device 0 ...".
std::optional<std::uint64_t> bytes_in_parentheses(std::string_view message) {
  const std::size_t open = message.find('(');
  if (open == std::string_view::npos) return std::nullopt;
  const std::size_t close = message.find(" bytes)", open);
  if (close == std::string_view::npos) return std::nullopt;
  return digits(message.substr(open + 1, close - open - 1));
}

// The older form, "XLA backend allocating 63700000000 bytes on device 0 ...": the figure after
// `prefix`; else the exact one in parentheses.
std::optional<std::uint64_t> pool_bytes(std::string_view message, std::string_view prefix) {
  if (auto exact = bytes_in_parentheses(message)) return exact;
  const std::string_view rest = message.substr(prefix.size());
  return digits(rest.substr(0, rest.find(' ')));
}

class XlaLogReader {
 public:
  // `pool`: the device pool to read ("GPU_0_bfc").
  XlaLogReader(const std::filesystem::path& path, trace::Format format, std::string pool,
               const trace::LoadOptions& options)
      : path_(path),
        builder_(format, path),
        pool_(std::move(pool)),
        requests_(path, pool_),
        completed_(options.completed),
        died_asking_(options.died_asking) {}

  void read_line(std::string_view line, std::uint64_t number) {
    const std::optional<LogLine> log = read_log_line(line);
    // A [mem-debug] line is the pool's record: one that is not read is an error, not skipped.
    if (line.find(kMemDebugTag) != std::string_view::npos &&
        (!log || !log->message.starts_with(kMemDebug))) {
      trace::bad_input({path_, number, {}},
                       "a [mem-debug] line that does not begin with XLA's log prefix and "
                       "\"[mem-debug] \" (text before it?)");
    }
    if (!log) return;
    t_ns_ = time(log->t_ns);
    const std::string_view message = log->message;
    if (message.starts_with(kMemDebug)) {
      mem_debug(message.substr(kMemDebug.size()), *log, {path_, number, {}});
    } else if (message.starts_with("AllocateRaw ") &&
               message.find(" alignment=") != std::string_view::npos) {
      request(message.substr(12), *log, number);
    } else if (message.starts_with("Extending allocation by ")) {
      if (message.ends_with(fmt::format(" for {}.", pool_)) && log->thread_known) {
        extending_.insert(log->thread);
      } else {
        extending_.erase(log->thread);
      }
    } else if (message.starts_with("Allocated memory at ") && extending_.erase(log->thread) > 0) {
      region(message.substr(20));
    } else if (message.starts_with("BFCAllocator dump for ")) {
      dump(message.substr(22), *log);
    } else if (message.starts_with("XLA backend allocating ") && set_up_of_ours(message)) {
      preallocate_ = true;
      limit_ = pool_bytes(message, "XLA backend allocating ");
    } else if (message.starts_with("XLA backend will use up to ") && set_up_of_ours(message)) {
      preallocate_ = false;
      limit_ = pool_bytes(message, "XLA backend will use up to ");
    }
  }

  trace::Trace finish() {
    requests_.check_all_answered();
    build();
    trace::Trace& t = builder_.trace();
    RecordedSettings settings{.backend = "xla"};
    if (preallocate_) settings.options["preallocate"] = *preallocate_;
    if (limit_) settings.options["limit"] = Bytes{*limit_};  // the pool's, read by exec's model
    if (regions_bytes_ > 0) settings.options["regions"] = Bytes{regions_bytes_};
    if (!t.recorded) t.recorded.emplace();
    t.recorded->allocator_settings = std::move(settings);
    return builder_.finish();
  }

 private:
  // The log's time of day made a clock that runs on past midnight.
  std::uint64_t time(std::uint64_t of_day) {
    if (last_of_day_ && of_day + kDayNs / 2 < *last_of_day_) days_ += kDayNs;
    last_of_day_ = of_day;
    return days_ + of_day;
  }

  bool ours(std::string_view pool) const { return pool == pool_; }

  // The pool's set-up line ("... on device 0 for BFCAllocator."), of our device's pool. JAX
  // sets up a pool for collectives beside it when the pool grows ("XLA backend will use up to
  // 144271474688 bytes on device 0 for CollectiveBFCAllocator."): not the device pool's limit.
  bool set_up_of_ours(std::string_view message) const {
    if (!message.ends_with(" for BFCAllocator.")) return false;
    const std::string device = pool_.substr(4, pool_.size() - 8);  // GPU_<device>_bfc
    return message.find(fmt::format(" on device {} ", device)) != std::string_view::npos;
  }

  // "0x7ff24a400000 to 0x7ff24a600000": a region the pool took from the device (after its
  // "Extending allocation by 2.00MiB bytes for GPU_0_bfc." on the same thread).
  // A range cut short (a log that ended in it) is only a figure lost: skipped.
  void region(std::string_view rest) {
    const std::size_t to = rest.find(" to ");
    if (to == std::string_view::npos) return;
    const std::optional<std::uint64_t> low = address(rest.substr(0, to));
    const std::optional<std::uint64_t> high = address(rest.substr(to + 4));
    if (low && high && *high > *low) regions_bytes_ += *high - *low;
  }
  static std::optional<std::uint64_t> address(std::string_view text) {
    if (!text.starts_with("0x")) return std::nullopt;
    text.remove_prefix(2);
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  }

  // A request awaits its answer (xla_log_requests.hpp).
  void request(std::string_view rest, const LogLine& log, std::uint64_t number) {
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos || !ours(rest.substr(0, space))) return;
    const std::string_view bytes = rest.substr(space + 1, rest.find(' ', space + 1) - space - 1);
    const std::uint64_t size = trace::read_size(bytes, {path_, number, "bytes"});
    requests_.ask(thread_of(log), {.bytes = size, .t_ns = t_ns_, .line = number});
  }
  static std::optional<std::uint64_t> thread_of(const LogLine& log) {
    return log.thread_known ? std::optional(log.thread) : std::nullopt;
  }

  // The pool's dump, logged by the thread whose request it could not serve, when it gives up:
  // that request failed there, before whatever the program freed after it.
  void dump(std::string_view pool, const LogLine& log) {
    if (!ours(pool)) return;
    if (!log.thread_known) {
      dumped_unthreaded_ = true;  // its failed answer ("...,0,") comes next
      return;
    }
    const std::optional<Request> given_up = requests_.give_up(log.thread);
    if (!given_up) return;
    fail(*given_up, log.thread);
    last_dumped_ = events_.size() - 1;
  }

  void mem_debug(std::string_view rest, const LogLine& log, const Place& place) {
    const bool alloc = rest.starts_with("AllocateRaw,");
    if (!alloc && !rest.starts_with("DeallocateRaw,")) {
      trace::bad_input(place, fmt::format("a [mem-debug] line that is neither \"AllocateRaw,\" nor "
                                          "\"DeallocateRaw,\" ('{}'): cut short?",
                                          rest.substr(0, 32)));
    }
    rest.remove_prefix(alloc ? 12 : 14);
    const std::optional<Fields> f = comma_fields(rest);
    if (!f) trace::bad_input(place, "a [mem-debug] line without its pool, size and address");
    if (!ours(f->pool)) return;
    const std::uint64_t bytes = trace::read_size(f->bytes, {place.file, place.line, "bytes"});
    const std::uint64_t address =
        f->address == "0" ? 0 : trace::read_hex(f->address, {place.file, place.line, "address"});
    if (alloc) {
      const PendingRequests::Answered answered = requests_.answer(thread_of(log), bytes);
      if (address == 0) {
        if (answered.given_up) return;  // failed already, at the pool's dump
        // The refusal is its request's, as a dump's is: at its line and time.
        fail(answered.request.value_or(Request{.bytes = bytes, .t_ns = t_ns_, .line = place.line}),
             log.thread);
        if (std::exchange(dumped_unthreaded_, false)) last_dumped_ = events_.size() - 1;
        return;
      }
    }
    add(alloc ? Op::alloc : Op::free, bytes, address, log.thread, t_ns_, place.line);
  }

  void add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t thread,
           std::uint64_t t_ns, std::uint64_t line) {
    events_.push_back({op, bytes, address, thread, t_ns, line});
  }

  // The events, up to the program's death where it died of a failed request: a request the pool
  // gave up on (its dump) after which the program asked for less than a tenth of it in all was
  // the OOM it raised; what followed was its end (work already dispatched, the exit's frees).
  // JAX dispatches ahead: measured, a convnet refused 7.12 GiB for its step made the next step's
  // images (73.5 MiB, 1.0% of it) before it raised.
  void build() {
    std::size_t end = events_.size();
    if (const std::optional<std::size_t> death = refusal_of(died_asking_); death && !completed_) {
      end = *death + 1;
    } else if (last_dumped_ && !completed_) {
      std::uint64_t after = 0;
      for (std::size_t i = *last_dumped_ + 1; i < events_.size(); ++i) {
        if (events_[i].op == Op::alloc) after += events_[i].bytes;
      }
      if (after < events_[*last_dumped_].bytes / 10) end = *last_dumped_ + 1;
    }
    // The program's own requests come from one thread, the first to ask; XLA's compiler asks on
    // threads of its own (the autotuner's candidates), a stream of their own.
    const std::uint64_t program = events_.empty() ? 0 : events_.front().thread;
    for (std::size_t i = 0; i < end; ++i) {
      const Entry& e = events_[i];
      const std::uint64_t stream = e.thread == program ? 0 : 1;
      builder_.add(e.op, e.bytes, e.address, stream, e.thread, e.t_ns, i, e.line);
    }
  }

  // The last refusal of `bytes` (within a hundredth: the log has the pool's rounding, a message
  // two decimals).
  [[nodiscard]] std::optional<std::size_t> refusal_of(std::optional<std::uint64_t> bytes) const {
    if (!bytes) return std::nullopt;
    for (std::size_t i = events_.size(); i-- > 0;) {
      const Entry& e = events_[i];
      const auto [low, high] = std::minmax(e.bytes, *bytes);
      if (e.op == Op::failed && high - low <= high / 100) return i;
    }
    return std::nullopt;
  }

  void fail(const Request& request, std::uint64_t thread) {
    add(Op::failed, request.bytes, 0, thread, request.t_ns, request.line);
  }

  const std::filesystem::path& path_;
  trace::TraceBuilder builder_;
  std::string pool_;
  PendingRequests requests_;
  bool completed_;                            // the program completed: no refusal was its death
  std::optional<std::uint64_t> died_asking_;  // LoadOptions::died_asking
  std::optional<bool> preallocate_;
  std::optional<std::uint64_t> limit_;  // the pool's, from its set-up line
  std::set<std::uint64_t> extending_;   // threads whose pool region's range is to come
  std::uint64_t regions_bytes_ = 0;     // what the pool's regions took from the device
  std::optional<std::uint64_t> last_of_day_;
  std::uint64_t days_ = 0;
  std::uint64_t t_ns_ = 0;
  struct Entry {
    Op op;
    std::uint64_t bytes;
    std::uint64_t address;
    std::uint64_t thread;
    std::uint64_t t_ns;
    std::uint64_t line;
  };
  std::vector<Entry> events_;
  std::optional<std::size_t> last_dumped_;
  bool dumped_unthreaded_ = false;  // a dump on a line without its thread, its failure to come
};

trace::Format xla_format() {
  static const trace::Format kFormat = [] {
    const trace::FormatInfo* info = trace::find_format(kXlaFormatName);
    if (info == nullptr) throw Error(ErrorKind::internal, "the xla format is not registered");
    return info->format;
  }();
  return kFormat;
}

}  // namespace

// An absl log from its first line's prefix, "I1129 01:46:01.030317 " (XLA's, when exec kept
// it), or TensorFlow's, "2026-11-29 01:46:01.030317: I " (its BFC allocator is the same).
bool is_xla_log(std::string_view head) {
  const std::string_view first = trace::first_content(head);
  if (tensorflow_prefix(first) != 0) {
    for (const std::size_t at : {0, 1, 2, 3, 5, 6, 8, 9}) {
      if (!is_digit(first[at])) return false;
    }
    return time_of_day(first, 11).has_value();
  }
  if (first.size() < 22 || (first[0] != 'I' && first[0] != 'W' && first[0] != 'E')) return false;
  for (const std::size_t at : {1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20}) {
    if (!is_digit(first[at])) return false;
  }
  return first[5] == ' ' && first[8] == ':' && first[11] == ':' && first[14] == '.' &&
         first[21] == ' ';
}

trace::Trace load_xla_log(const std::filesystem::path& path, const trace::LoadOptions& options) {
  const std::string pool = pool_to_read(path, options);
  std::ifstream file = trace::open_trace(path);
  trace::StopPoll poll(options.check_stop);
  XlaLogReader reader(path, xla_format(), pool, options);
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(file, line)) {
    ++number;
    poll();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    reader.read_line(line, number);
  }
  return reader.finish();
}

}  // namespace oomlab::jax
