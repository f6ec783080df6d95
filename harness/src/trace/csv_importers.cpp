// oomlab's events.csv (Fast C++ CSV Parser) and RMM's logging_resource_adaptor log (rows by
// RmmRows, header checked by fccp).
#include <fmt/format.h>
#include <libfccp/csv.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"
#include "trace/rmm_rows.hpp"

namespace oomlab::trace {

namespace {

// The file's bytes quoted in a message, control characters as \xNN: a NUL would end the message
// where it is printed, a newline split its one line.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void bad_input(const Place& place, std::string_view what) {
  if (place.column.empty()) {
    throw Error(ErrorKind::input,
                fmt::format("{}:{}: {}", place.file.string(), place.line, printable(what)));
  }
  throw Error(ErrorKind::input, fmt::format("{}:{}: {}: {}", place.file.string(), place.line,
                                            place.column, printable(what)));
}

std::ifstream open_trace(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::input, fmt::format("{}: is a folder, not a trace file", path.string()));
  // A FIFO or a device would block the open or never end: only plain files are read.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorKind::input, fmt::format("{}: not a regular file", path.string()));
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int why = errno;
    throw Error(ErrorKind::input, fmt::format("{}: cannot open the trace: {}", path.string(),
                                              std::generic_category().message(why)));
  }
  if (std::filesystem::file_size(path, ec) == 0 && !ec)
    throw Error(ErrorKind::input, fmt::format("{}: the trace is empty", path.string()));
  return file;
}

std::uint64_t read_decimal(std::string_view text, const Place& place) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    bad_input(place, fmt::format("'{}' is out of range", text));
  if (ec != std::errc() || end != text.data() + text.size())
    bad_input(place, fmt::format("'{}' is not a number", text));
  return value;
}

std::uint64_t read_size(std::string_view text, const Place& place) {
  if (!text.empty() && text.front() == '-')
    bad_input(place, fmt::format("'{}' is a negative size", text));
  const std::uint64_t size = read_decimal(text, place);
  if (size > kLargestSize)
    bad_input(place, fmt::format("{} bytes is not a size any allocator has", size));
  return size;
}

std::uint64_t read_hex(std::string_view text, const Place& place) {
  if (text == "(nil)") return 0;
  std::string_view digits = text;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    bad_input(place, fmt::format("'{}' is not a hexadecimal address", text));
  }
  return value;
}

namespace {

struct Seconds {
  std::uint64_t whole;
  std::uint64_t ns;  // the fraction, to nanoseconds
};

// "SS" or "SS.fff..." (digits past the ninth are ignored).
Seconds read_seconds(std::string_view text, const Place& place) {
  const auto dot = text.find('.');
  Seconds s{.whole = read_decimal(text.substr(0, dot), place), .ns = 0};
  if (dot != std::string_view::npos) {
    const std::string_view fraction = text.substr(dot + 1, 9);
    s.ns = read_decimal(fraction, place);
    for (std::size_t i = fraction.size(); i < 9; ++i)
      s.ns *= 10;
  }
  return s;
}

}  // namespace

std::uint64_t read_clock(std::string_view text, const Place& place) {
  // HH:MM:SS.ffffff
  if (text.size() >= 8 && text[2] == ':' && text[5] == ':') {
    const std::uint64_t h = read_decimal(text.substr(0, 2), place);
    const std::uint64_t m = read_decimal(text.substr(3, 2), place);
    const Seconds s = read_seconds(text.substr(6), place);
    if (h > 23 || m > 59 || s.whole > 60)
      bad_input(place, fmt::format("'{}' is not a time of day", text));
    return ((h * 60 + m) * 60 + s.whole) * 1'000'000'000ULL + s.ns;
  }
  // seconds since the epoch, with a fraction
  const Seconds s = read_seconds(text, place);
  if (s.whole > 1ULL << 33U) bad_input(place, fmt::format("'{}' is not a time", text));
  return s.whole * 1'000'000'000ULL + s.ns;
}

namespace {

// fccp's own messages name the file again; the place says it once, as file:line.
[[noreturn]] void rethrow_csv(const std::filesystem::path& path, const io::error::base& e) {
  if (dynamic_cast<const io::error::can_not_open_file*>(&e) != nullptr) {
    throw Error(ErrorKind::input, fmt::format("{}: cannot open the trace", path.string()));
  }
  const auto* at = dynamic_cast<const io::error::with_file_line*>(&e);
  const int line = at != nullptr && at->file_line > 0 ? at->file_line : 1;  // header errors: line 1
  const auto* column = dynamic_cast<const io::error::with_column_name*>(&e);
  std::string what = e.what();
  if (dynamic_cast<const io::error::too_few_columns*>(&e) != nullptr) what = "too few columns";
  if (dynamic_cast<const io::error::too_many_columns*>(&e) != nullptr) what = "too many columns";
  if (dynamic_cast<const io::error::header_missing*>(&e) != nullptr)
    what = "the file is empty: no header";
  if (dynamic_cast<const io::error::escaped_string_not_closed*>(&e) != nullptr)
    what = "a quoted field is not closed";
  if (dynamic_cast<const io::error::line_length_limit_exceeded*>(&e) != nullptr)
    what = "a line is too long";
  if (dynamic_cast<const io::error::missing_column_in_header*>(&e) != nullptr) {
    what = fmt::format("the header lacks the column '{}'", column->column_name);
  }
  if (dynamic_cast<const io::error::duplicated_column_in_header*>(&e) != nullptr) {
    what = fmt::format("the header has the column '{}' twice", column->column_name);
  }
  throw Error(ErrorKind::input, fmt::format("{}:{}: {}", path.string(), line, what));
}

Op rmm_action(const char* action, const Place& place) {
  if (action[0] == 'a' && std::strcmp(action, "allocate") == 0) return Op::alloc;
  if (action[0] == 'f' && action[1] == 'r' && action[2] == 'e' && action[3] == 'e' &&
      action[4] == '\0') {
    return Op::free;
  }
  if (std::strcmp(action, "free") == 0 || std::strcmp(action, "deallocate") == 0) return Op::free;
  if (std::strcmp(action, "allocate failure") == 0) return Op::failed;
  bad_input(place,
            fmt::format("'{}' is not an RMM action (allocate, free, allocate failure)", action));
}

}  // namespace

Trace load_rmm_csv(const std::filesystem::path& path, StopPoll poll) {
  std::ifstream in = open_trace(path);
  return parse_rmm_csv(path, in, std::move(poll));
}

// Blank lines (CRLF ones too: the reader drops a line's '\r') are skipped; fccp drops a UTF-8
// byte-order mark itself. Line numbers stay those of the file.
using OomlabReader = io::CSVReader<9, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                                   io::throw_on_overflow, io::empty_line_comment>;

Trace parse_rmm_csv(const std::filesystem::path& path, std::istream& in, StopPoll poll) {
  TraceBuilder builder(Format::rmm, path);
  try {
    RmmRows rows(path, in);
    std::array<char*, 6> field{};
    auto& [thread, time, action, pointer, size, stream] = field;
    std::uint64_t row = 0;
    std::uint64_t previous_clock = 0;
    std::uint64_t days = 0;  // HH:MM:SS wraps at midnight
    const auto in_days = [&](std::uint64_t clock) {
      if (clock + 3'600'000'000'000ULL < previous_clock) ++days;  // back by over an hour: a new day
      previous_clock = clock;
      return clock + days * 86'400'000'000'000ULL;
    };
    RmmRow common;
    for (;;) {
      if (rows.next_common(common)) {
        poll();
        builder.add(common.op, common.size, common.pointer, common.stream, common.thread,
                    in_days(common.clock_ns), row++, rows.line());
        continue;
      }
      if (!rows.next(field)) break;
      poll();
      const std::uint64_t line = rows.line();
      const std::uint64_t clock = in_days(read_clock_field(time, {path, line, "Time"}));
      builder.add(rmm_action(action, {path, line, "Action"}),
                  read_size_field(size, {path, line, "Size"}),
                  read_hex_field(pointer, {path, line, "Pointer"}),
                  read_hex_field(stream, {path, line, "Stream"}),
                  read_decimal_field(thread, {path, line, "Thread"}), clock, row++, line);
    }
  } catch (const io::error::base& e) {
    rethrow_csv(path, e);
  }
  return builder.finish();
}

Trace load_oomlab_csv(const std::filesystem::path& path, StopPoll poll) {
  std::ifstream in = open_trace(path);
  return parse_oomlab_csv(path, in, std::move(poll));
}

Trace parse_oomlab_csv(const std::filesystem::path& path, std::istream& in, StopPoll poll) {
  TraceBuilder builder(Format::oomlab, path);
  try {
    OomlabReader csv(path.string(), in);
    csv.read_header(io::ignore_extra_column, "seq", "t_ns", "op", "bytes", "ptr", "stream",
                    "thread", "status", "phase");
    char* seq = nullptr;
    char* t_ns = nullptr;
    char* op = nullptr;
    char* bytes = nullptr;
    char* ptr = nullptr;
    char* stream = nullptr;
    char* thread = nullptr;
    char* status = nullptr;
    char* phase = nullptr;
    while (csv.read_row(seq, t_ns, op, bytes, ptr, stream, thread, status, phase)) {
      poll();
      const std::uint64_t line = csv.get_file_line();
      const std::string_view kind = op;
      const std::string_view result = status;
      Op event_op = Op::alloc;
      if (kind == "alloc") {
        event_op =
            result == "ok" ? Op::alloc : Op::failed;  // an error status is a failed request too
      } else if (kind == "free") {
        event_op = Op::free;
      } else if (kind == "oom") {
        event_op = Op::failed;
      } else if (kind == "probe" || kind == "mark" || kind == "sample") {
        builder.ignore();  // oomlab's own look at the allocator, not the program's
        continue;
      } else {
        bad_input(
            {path, line, "op"},
            fmt::format("'{}' is not an oomlab op (alloc, free, oom, probe, mark, sample)", kind));
      }
      builder.add(event_op, read_size_field(bytes, {path, line, "bytes"}),
                  read_hex_field(ptr, {path, line, "ptr"}),
                  read_hex_field(stream, {path, line, "stream"}),
                  read_decimal_field(thread, {path, line, "thread"}),
                  read_decimal_field(t_ns, {path, line, "t_ns"}),
                  read_decimal_field(seq, {path, line, "seq"}), line);
    }
  } catch (const io::error::base& e) {
    rethrow_csv(path, e);
  }
  return builder.finish();
}

}  // namespace oomlab::trace
