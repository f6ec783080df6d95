// The rows of an RMM log, read in large blocks with each line found by memchr and split in place:
// fccp's row path (a byte-by-byte line scan, a splitter, block copies) was half of a load
// (bench/NOTES.md). fccp's CSVReader still checks the header, so its refusals are unchanged.
// Like it: a UTF-8 byte-order mark is dropped, '\r' before '\n' too, blank lines are skipped,
// fields are trimmed of spaces and tabs, columns past the six are ignored.
// A row of the common shape (RMM's own: its columns in RMM's order, nothing to trim) is also
// converted in the same pass that finds its end; any other row is split and left to the field
// readers, which alone refuse.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <vector>

#include "oomlab/trace_events.hpp"

namespace oomlab::trace {

// One row as numbers, read by RmmRows::next_common.
struct RmmRow {
  std::uint64_t thread = 0;
  std::uint64_t clock_ns = 0;  // as written: the time of day or since the epoch
  Op op = Op::alloc;
  std::uint64_t pointer = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
};

class RmmRows {
 public:
  // Reads and checks the header; Error(input) "file:1: ..." when it lacks a column.
  RmmRows(const std::filesystem::path& path, std::istream& in);

  // Thread, Time, Action, Pointer, Size, Stream of the next row (NUL-terminated); false at the
  // end. Error(input) "file:line: too few columns" (or too many).
  bool next(std::array<char*, 6>& fields);
  // The next row, converted in one pass, when it has the common shape: true. Otherwise false
  // and nothing is read (blank lines, a row to trim or refuse, the end of a block or the file):
  // next(fields) takes it.
  bool next_common(RmmRow& row);
  [[nodiscard]] std::uint64_t line() const { return line_; }

 private:
  char* next_line();
  bool fill();

  const std::filesystem::path& path_;
  std::istream& in_;
  std::unique_ptr<char[]> buffer_;
  std::size_t begin_ = 0;  // the unread bytes, in the buffer
  std::size_t end_ = 0;
  bool at_end_ = false;
  std::uint64_t line_ = 0;
  std::uint64_t read_ = 0;     // bytes of the file, for the progress line
  std::vector<int> order_;     // each column's field, or -1
  bool common_order_ = false;  // the header is RMM's six columns in RMM's order
};

}  // namespace oomlab::trace
