// Reading which rank of a distributed job wrote a line of its output, as PyTorch and torchrun mark
// it, and which device a PyTorch OOM line names; what a launcher says of a failed job is its
// framework's to read (Launcher, oomlab/framework.hpp), with the small readers below. Pure readers
// of program output.
#pragma once

#include <cstddef>
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

// Small readers of a report's lines, for the launchers' readers (Launcher::report).
// The number at `at` (digits only, at most 6 of them); its end in `end`.
[[nodiscard]] std::optional<int> number_at(std::string_view text, std::size_t at,
                                           std::size_t* end = nullptr);
// The number after the first `key`, spaces skipped.
[[nodiscard]] std::optional<int> number_after(std::string_view text, std::string_view key);
// Without the spaces and tabs before it, and the spaces and CR after it.
[[nodiscard]] std::string_view trimmed(std::string_view text);
// "  rank      : 1 (local_rank: 1)" -> "1 (local_rank: 1)" when the field is `name`.
[[nodiscard]] std::optional<std::string_view> field(std::string_view line, std::string_view name);

}  // namespace oomlab
