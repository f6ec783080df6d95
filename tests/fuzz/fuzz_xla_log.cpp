// libFuzzer target: the trace format `xla` (XLA's BFC allocator log) on arbitrary text, through
// the file it is read from, as `replay` and exec's model read it.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "jax/trace/xla_log.hpp"
#include "trace_fuzz_common.hpp"

namespace {

// The one file each input is written to, removed when the fuzzer ends.
struct InputFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("oomlab-fuzz-xla-" + std::to_string(::getpid()));
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile(InputFile&&) = delete;
  InputFile& operator=(InputFile&&) = delete;
  ~InputFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const InputFile kInput;
  const std::filesystem::path& kFile = kInput.path;
  {
    std::ofstream out(kFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const std::string head(reinterpret_cast<const char*>(data), std::min<std::size_t>(size, 4096));
  (void)oomlab::jax::is_xla_log(head);
  oomlab::fuzz::refused_or_checked([&] { return oomlab::jax::load_xla_log(kFile, {}); });
  return 0;
}
