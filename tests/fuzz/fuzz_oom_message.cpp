// libFuzzer target: OOM line recognition and the scanner on arbitrary bytes, split into lines as
// `oomlab exec` splits a program's output. Recognition must never throw, crash or wrap a size,
// and a kept line must stay within its 400 bytes (+ "…").
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "exec/oom_message.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  oomlab::OomScanner scanner;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (const auto oom = oomlab::recognise_oom_line(line)) {
      if (oom->line.size() > 403 || oom->framework.empty()) std::abort();
      (void)oomlab::diagnose_program_oom(*oom);
    }
    scanner.feed_line(line);
    start = end + 1;
  }
  if (scanner.found() && scanner.lines_seen() == 0) std::abort();
  return 0;
}
