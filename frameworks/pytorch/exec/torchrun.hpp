// torchrun, PyTorch's launcher (Framework::launcher): its report of a failed job's workers (the
// "Root Cause" section of torch/distributed/elastic/multiprocessing/errors) and the error files
// `@record` writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "oomlab/framework.hpp"

namespace oomlab::torch {

// One failure of torchrun's report:
//   [0]:
//     time      : 2026-11-25_10:12:03
//     rank      : 1 (local_rank: 1)
//     exitcode  : 1 (pid: 4242)
//     error_file: /tmp/torchelastic_x/none_y/attempt_0/1/error.json   (or <N/A>)
// those under "Root Cause (first observed failure):" its root cause.
class TorchrunReport final : public LauncherReport {
 public:
  void feed_line(std::string_view line) override;

 private:
  bool in_root_ = false;
  bool in_failure_ = false;
};

// What torch.distributed.elastic's ErrorHandler wrote for an exception (`@record`):
// {"message": {"message": "OutOfMemoryError: ...", "extraInfo": {"py_callstack": ...,
// "timestamp": "1764065523"}}}, or the older {"message": "...", "timestamp": N}.
struct ElasticErrorFile {
  std::string message;
  std::optional<std::int64_t> timestamp;  // seconds since the epoch
};
// None when the file is missing or not such a file (it is the program's: never an error).
[[nodiscard]] std::optional<ElasticErrorFile> read_elastic_error_file(
    const std::filesystem::path& path);

[[nodiscard]] Launcher torchrun();

}  // namespace oomlab::torch
