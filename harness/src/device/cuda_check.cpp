#include "device/cuda_check.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "oomlab/error.hpp"

namespace oomlab::detail {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  throw Error(
      ErrorKind::device,
      fmt::format("{}:{}: {} failed: {} ({})", std::filesystem::path(file).filename().string(),
                  line, call, cudaGetErrorName(status), cudaGetErrorString(status)));
}

}  // namespace oomlab::detail
