// libFuzzer target: the PyTorch snapshot importer (the data-only unpickler, or JSON when the input
// starts with '{'), at both levels.
#include <string>

#include "pytorch/trace/pytorch_import.hpp"
#include "trace_fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (const auto level : {oomlab::trace::Level::tensor, oomlab::trace::Level::segment}) {
    oomlab::fuzz::refused_or_checked(
        [&] { return oomlab::torch::parse_pytorch_snapshot("fuzz.pickle", bytes, level, {}); });
  }
  return 0;
}
