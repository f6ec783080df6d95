// The rows of an RMM log, read in large blocks with each line found by memchr and split in place:
// fccp's row path (a byte-by-byte line scan, a splitter, block copies) was half of a load
// (bench/NOTES.md). fccp's CSVReader still checks the header, so its refusals are unchanged.
// Like it: a UTF-8 byte-order mark is dropped, '\r' before '\n' too, blank lines are skipped,
// fields are trimmed of spaces and tabs, columns past the six are ignored.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <vector>

namespace oomlab::trace {

class RmmRows {
 public:
  // Reads and checks the header; Error(input) "file:1: ..." when it lacks a column.
  RmmRows(const std::filesystem::path& path, std::istream& in);

  // Thread, Time, Action, Pointer, Size, Stream of the next row (NUL-terminated); false at the
  // end. Error(input) "file:line: too few columns" (or too many).
  bool next(std::array<char*, 6>& fields);
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
  std::uint64_t read_ = 0;  // bytes of the file, for the progress line
  std::vector<int> order_;  // each column's field, or -1
};

}  // namespace oomlab::trace
