#include "device/cuda_check.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "oomlab/error.hpp"

namespace oomlab::detail {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  const std::string message =
      fmt::format("{}:{}: {} failed: {} ({})", std::filesystem::path(file).filename().string(),
                  line, call, cudaGetErrorName(status), cudaGetErrorString(status));
  if (alloc_status(status) == AllocStatus::out_of_memory)
    throw Error::device_out_of_memory(message);
  throw Error(ErrorKind::device, message);
}

}  // namespace oomlab::detail
