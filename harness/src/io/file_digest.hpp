// What a file holds, as one name: the SHA-256 of its bytes ("sha256:ba78..."), as `sha256sum`
// prints it. Results whose parameters name a file (replay's trace) record it, so that `compare`
// matches cells by what was replayed, not by the path as typed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

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

}  // namespace oomlab
