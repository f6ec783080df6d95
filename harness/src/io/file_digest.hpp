// What a file holds, as one name: the SHA-256 of its bytes ("sha256:ba78..."), as `sha256sum`
// prints it. Results whose parameters name a file (replay's trace) record it, so that `compare`
// matches cells by what was replayed, not by the path as typed.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "oomlab/params.hpp"

namespace oomlab {

// Lower-case hex, 64 digits; with the CPU's SHA instructions where it has them.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);
// The same without them, whatever the CPU: the tests hold the two to each other.
[[nodiscard]] std::string sha256_hex_portable(std::string_view bytes);
// "sha256:<hex>" of the file's bytes; throws Error(input) naming the file when it cannot be read.
[[nodiscard]] std::string file_digest(const std::filesystem::path& path);

// For each text parameter of `spec` whose value names a regular file: name -> file_digest().
[[nodiscard]] std::map<std::string, std::string> file_digests(const ParamSpec& spec,
                                                              const Params& params);

// file_digests() worked out on a thread of its own while a run reads the same file: the files
// are opened here (one that cannot be read is refused now, before the run), read and hashed
// there. Destroyed before get(), it stops the hashing and waits for nothing more.
class FileDigests {
 public:
  FileDigests(const ParamSpec& spec, const Params& params);
  FileDigests(const FileDigests&) = delete;
  FileDigests& operator=(const FileDigests&) = delete;
  ~FileDigests();

  // Waits for the hashing; throws Error(input) naming a file that could not be read. Any thread.
  [[nodiscard]] std::map<std::string, std::string> get();

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> digests_;
  std::exception_ptr failed_;
  std::jthread worker_;
};

}  // namespace oomlab
