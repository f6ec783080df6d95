#include "trace/rmm_rows.hpp"

#include <fmt/format.h>
#include <libfccp/csv.h>

#include <cstring>
#include <sstream>
#include <string>
#include <string_view>

#include "oomlab/error.hpp"
#include "trace/load_status.hpp"

namespace oomlab::trace {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 24;  // the longest line, as fccp's
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

}  // namespace

RmmRows::RmmRows(const std::filesystem::path& path, std::istream& in)
    : path_(path), in_(in), buffer_(new char[2 * kBlock + 1]) {
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
}

bool RmmRows::fill() {
  if (at_end_) return false;
  std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  in_.read(buffer_.get() + end_, static_cast<std::streamsize>(2 * kBlock - end_));
  const auto got = static_cast<std::size_t>(in_.gcount());
  if (line_ == 0 && end_ == 0 && got >= 3 && std::memcmp(buffer_.get(), "\xEF\xBB\xBF", 3) == 0)
    begin_ = 3;  // a UTF-8 byte-order mark
  end_ += got;
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
