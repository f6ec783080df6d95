// libFuzzer target: the oomlab csv importer on arbitrary text.
#include <sstream>
#include <string>

#include "trace/importers.hpp"
#include "trace_fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  oomlab::fuzz::refused_or_checked([&] {
    std::istringstream in(text);
    return oomlab::trace::parse_oomlab_csv("fuzz.csv", in);
  });
  return 0;
}
