#include "trace/rmm_rows.hpp"

#include <fmt/format.h>
#include <libfccp/csv.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "oomlab/error.hpp"
#include "trace/field_scan.hpp"
#include "trace/importers.hpp"
#include "trace/load_status.hpp"

namespace oomlab::trace {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 24;  // the longest line, as fccp's
// Read a mebibyte at a time: the rows are parsed while still in the cache the read put them in,
// and only as much of the buffer is touched as the longest line needs.
constexpr std::size_t kRead = std::size_t{1} << 20;
constexpr std::size_t kSlack = 16;  // after the bytes read: a NUL, and room to read 8 at a time
constexpr std::array<std::string_view, 6> kColumns{"Thread",  "Time", "Action",
                                                   "Pointer", "Size", "Stream"};

bool blank(const char* line) {
  while (*line == ' ' || *line == '\t')
    ++line;
  return *line == '\0';
}

// The next field of `line` (advanced past its comma; nullptr after the last), trimmed in place.
char* split(char*& line) {
  char* begin = line;
  char* end = begin;
  while (*end != ',' && *end != '\0')
    ++end;
  line = *end == '\0' ? nullptr : end + 1;
  while (begin != end && (*begin == ' ' || *begin == '\t'))
    ++begin;
  while (end != begin && (end[-1] == ' ' || end[-1] == '\t'))
    --end;
  *end = '\0';
  return begin;
}

// `literal` at p: the pointer after it, or nullptr (the NUL after the block stops a mismatch).
const char* word(const char* p, const char* literal) {
  for (; *literal != '\0'; ++p, ++literal) {
    if (*p != *literal) return nullptr;
  }
  return p;
}

// RMM's own spellings and the comma after them; "deallocate" is left to the field readers.
const char* action(const char* p, Op& op) {
  if (p[0] == 'f') {
    op = Op::free;
    return word(p, "free,");
  }
  if (const char* end = word(p, "allocate,")) {
    op = Op::alloc;
    return end;
  }
  op = Op::failed;
  return word(p, "allocate failure,");
}

// A hexadecimal field and its comma ((nil): 0).
const char* pointer(const char* p, std::uint64_t& value) {
  if (const char* end = word(p, "(nil),")) {
    value = 0;
    return end;
  }
  p = scan::hex(p, value);
  return p != nullptr && *p == ',' ? p + 1 : nullptr;
}

// Decimal digits eight at a time (SWAR): the block has slack after its end, so that 8 bytes can
// be read wherever a field ends. Eight characters, the first in the low byte.
std::uint64_t load8(const char* p) {
  std::uint64_t chunk = 0;
  std::memcpy(&chunk, p, sizeof chunk);
  return chunk;
}

// How many of the chunk's characters are digits before the first that is not (0 to 8). A byte
// is flagged when its high nibble is not '0''s or its low nibble is past 9; a carry out of a
// flagged byte can only disturb the bytes after it.
unsigned leading_digits(std::uint64_t chunk) {
  const std::uint64_t x = chunk ^ 0x3030303030303030ULL;
  const std::uint64_t flagged =
      (x & 0xF0F0F0F0F0F0F0F0ULL) | ((x + 0x0606060606060606ULL) & 0x1010101010101010ULL);
  return flagged == 0 ? 8U : static_cast<unsigned>(std::countr_zero(flagged)) / 8U;
}

// The value of the chunk's first n digits (1 to 8): moved to the top, with zeros before them,
// then combined in pairs, fours and eights.
std::uint64_t digits_value(std::uint64_t chunk, unsigned n) {
  std::uint64_t x = (chunk & 0x0F0F0F0F0F0F0F0FULL) << (8U * (8U - n));
  x = (x * 10 + (x >> 8U)) & 0x00FF00FF00FF00FFULL;
  x = (x * 100 + (x >> 16U)) & 0x0000FFFF0000FFFFULL;
  return (x * 10000 + (x >> 32U)) & 0xFFFFFFFFULL;
}

// A decimal field of 1 to 19 digits (as scan::decimal takes them) and its comma.
const char* decimal(const char* p, std::uint64_t& value) {
  constexpr std::array<std::uint64_t, 9> kPowers{1,       10,        100,        1'000,      10'000,
                                                 100'000, 1'000'000, 10'000'000, 100'000'000};
  std::uint64_t v = 0;
  unsigned total = 0;
  for (unsigned n = 8; n == 8 && total <= 19;) {
    const std::uint64_t chunk = load8(p);
    n = leading_digits(chunk);
    if (n > 0) v = v * kPowers[n] + digits_value(chunk, n);
    total += n;
    p += n;
  }
  if (total == 0 || total > 19 || *p != ',') return nullptr;
  value = v;
  return p + 1;
}

}  // namespace

RmmRows::RmmRows(const std::filesystem::path& path, std::istream& in)
    : path_(path), in_(in), buffer_(new char[2 * kBlock + kSlack]) {
  char* header = nullptr;
  do {
    header = next_line();
    if (header == nullptr) {
      throw Error(ErrorKind::input,
                  fmt::format("{}:1: the file is empty: no header", path.string()));
    }
  } while (blank(header));
  std::istringstream alone(std::string(header) + "\n");  // fccp says what a bad header lacks
  io::CSVReader<6, io::trim_chars<' ', '\t'>, io::no_quote_escape<','>> check(path.string(), alone);
  check.read_header(io::ignore_extra_column, "Thread", "Time", "Action", "Pointer", "Size",
                    "Stream");
  for (char* rest = header; rest != nullptr;) {
    const std::string_view name = split(rest);
    int field = -1;
    for (std::size_t i = 0; i < kColumns.size(); ++i) {
      if (name == kColumns[i]) field = static_cast<int>(i);
    }
    order_.push_back(field);
  }
  common_order_ = order_ == std::vector<int>{0, 1, 2, 3, 4, 5};
}

bool RmmRows::fill() {
  if (at_end_) return false;
  std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  in_.read(buffer_.get() + end_, static_cast<std::streamsize>(std::min(kRead, 2 * kBlock - end_)));
  const auto got = static_cast<std::size_t>(in_.gcount());
  if (line_ == 0 && end_ == 0 && got >= 3 && std::memcmp(buffer_.get(), "\xEF\xBB\xBF", 3) == 0)
    begin_ = 3;  // a UTF-8 byte-order mark
  end_ += got;
  std::memset(buffer_.get() + end_, 0, kSlack);  // next_common stops at the NUL, at the latest
  at_end_ = got == 0;
  read_ += got;
  loading::bytes_read(read_);
  return !at_end_;
}

char* RmmRows::next_line() {
  char* start = nullptr;
  char* end = nullptr;
  for (;;) {
    start = buffer_.get() + begin_;
    end = static_cast<char*>(std::memchr(start, '\n', end_ - begin_));
    if (end != nullptr && end - start < static_cast<std::ptrdiff_t>(kBlock)) break;
    if (end_ - begin_ >= kBlock) {
      throw Error(ErrorKind::input,
                  fmt::format("{}:{}: a line is too long", path_.string(), line_ + 1));
    }
    if (end == nullptr && !fill()) {
      if (begin_ == end_) return nullptr;
      start = buffer_.get() + begin_;
      end = buffer_.get() + end_;  // the last line has no '\n': the buffer has room for a NUL
      break;
    }
  }
  *end = '\0';
  if (end != start && end[-1] == '\r') end[-1] = '\0';
  begin_ = std::min(end_, static_cast<std::size_t>(end - buffer_.get()) + 1);
  ++line_;
  return start;
}

bool RmmRows::next_common(RmmRow& row) {
  if (!common_order_) return false;
  const char* p = decimal(buffer_.get() + begin_, row.thread);
  if (p == nullptr) return false;
  p = scan::clock_ns(p, row.clock_ns);
  if (p == nullptr || *p++ != ',') return false;
  p = action(p, row.op);
  if (p == nullptr) return false;
  p = pointer(p, row.pointer);
  if (p == nullptr) return false;
  p = decimal(p, row.size);
  if (p == nullptr || row.size > kLargestSize) return false;
  p = scan::hex(p, row.stream);
  if (p == nullptr) return false;
  if (*p == '\r') ++p;
  if (*p != '\n') return false;
  begin_ = static_cast<std::size_t>(p + 1 - buffer_.get());
  ++line_;
  return true;
}

bool RmmRows::next(std::array<char*, 6>& fields) {
  char* line = nullptr;
  do {
    line = next_line();
    if (line == nullptr) return false;
  } while (blank(line));
  for (const int field : order_) {
    if (line == nullptr) {
      throw Error(ErrorKind::input, fmt::format("{}:{}: too few columns", path_.string(), line_));
    }
    char* value = split(line);
    if (field >= 0) fields[static_cast<std::size_t>(field)] = value;
  }
  if (line != nullptr) {
    throw Error(ErrorKind::input, fmt::format("{}:{}: too many columns", path_.string(), line_));
  }
  return true;
}

}  // namespace oomlab::trace
