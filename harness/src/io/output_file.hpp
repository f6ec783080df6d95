// The one way oomlab writes an output file (summary.json, events.csv, reports, matrix.json, ...):
// the parent folders made, the bytes written to a temporary file beside the target and renamed
// over it at the end, so that a reader never sees half a file and a failure (a full disk) leaves
// no 0-byte or truncated file behind. Every failure is Error(io) naming the file and the
// system's reason ("cannot write runs/x/summary.json: No space left on device").
// A target that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in
// place: renaming over it would replace the device itself.
#pragma once

#include <filesystem>
#include <string_view>

namespace oomlab {

// A file written piece by piece (events.csv): into a temporary file, renamed to the target by
// commit(). Destroyed without commit(), it removes the temporary and the target is untouched.
class OutputFile {
 public:
  // Makes the parent folders and opens the temporary.
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&&) = delete;
  OutputFile& operator=(OutputFile&&) = delete;

  void write(std::string_view bytes);
  // Closes and renames; on failure the temporary is removed before the throw.
  void commit();

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  void abandon() noexcept;
  [[noreturn]] void fail(int error);

  std::filesystem::path path_;    // as given: what messages name
  std::filesystem::path target_;  // path_ with its symbolic links followed
  std::filesystem::path temp_;    // empty when writing in place
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `text` as the file `path`.
void write_output_file(const std::filesystem::path& path, std::string_view text);

// `from` (a file oomlab wrote) copied to `to`, streamed.
void copy_output_file(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace oomlab
