// Which of XLA's device pools (GPU_<n>_bfc) a log holds requests or buffers of, and the one the
// trace format `xla` reads: the device named, else the log's one device. A file none of whose
// lines is a log line of XLA's (absl's prefix) or TensorFlow's is refused as no such log.
#pragma once

#include <filesystem>
#include <string>

#include "oomlab/trace.hpp"

namespace oomlab::jax {

// The pool to read ("GPU_0_bfc"), or Error(input) naming the pools the log holds.
[[nodiscard]] std::string pool_to_read(const std::filesystem::path& path,
                                       const trace::LoadOptions& options);

}  // namespace oomlab::jax
