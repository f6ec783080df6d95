// Reading which rank of a distributed job wrote a line of its output, as PyTorch and torchrun mark
// it, which device a PyTorch OOM line names, and what torchrun says of a failed job (its "Root
// Cause" section and the error files `@record` writes). Pure readers of program output.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab {

// A line with its rank marks taken off. torch.distributed's excepthook (installed by
// init_process_group) writes each traceback line as "[rank1]: ..." (the global rank); torchrun
// with --tee writes "[default1]:..." (its role's name, "default" unless set, and the local rank).
// Both may come together ("[default1]:[rank1]: ...").
struct RankMark {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string_view text;  // what follows the marks
};
[[nodiscard]] RankMark read_rank_marks(std::string_view line);

// The device a PyTorch OOM line names, in the program's own numbering (CUDA_VISIBLE_DEVICES'
// order): "GPU 1 has a total capacity" (2.x), "(GPU 1; 7.93 GiB total capacity" (1.x),
// "Allocation on device 1 would exceed" (the cudaMallocAsync backend).
[[nodiscard]] std::optional<int> oom_line_device(std::string_view line);

// One failure of torchrun's report (torch/distributed/elastic/multiprocessing/errors):
//   [0]:
//     time      : 2026-11-25_10:12:03
//     rank      : 1 (local_rank: 1)
//     exitcode  : 1 (pid: 4242)
//     error_file: /tmp/torchelastic_x/none_y/attempt_0/1/error.json   (or <N/A>)
struct TorchrunFailure {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> exit_code;
  std::optional<int> pid;
  std::string time;
  std::string error_file;   // empty: <N/A>
  bool root_cause = false;  // under "Root Cause (first observed failure):"
};

// Fed torchrun's output line by line; keeps every failure it reports.
class TorchrunReport {
 public:
  void feed_line(std::string_view line);
  [[nodiscard]] const std::vector<TorchrunFailure>& failures() const { return failures_; }
  [[nodiscard]] const TorchrunFailure* root_cause() const;

 private:
  std::vector<TorchrunFailure> failures_;
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

}  // namespace oomlab
