// exec's part of a run: the program, its devices and ranks, and the OOM as it reported it itself.
// Part of RunResult (run/run_result.hpp); summary.json's "program".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace oomlab {

// The OOM as a program run by `exec` reported it itself: its line, and the figures it carried
// beyond the request (PyTorch: what its cache held).
struct ProgramMessage {
  std::string framework;  // "PyTorch", "JAX/XLA", ...
  std::string line;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;   // reserved but unallocated
  std::optional<std::uint64_t> framework_limit_bytes;         // a pool's own limit
  std::optional<std::uint64_t> framework_largest_free_bytes;  // its largest free piece
  std::optional<std::uint64_t> device_free_bytes;             // what it said the device had free
  std::string sizing_setting;  // the framework sized itself from the device's total: the fix
  std::size_t lines_seen = 0;  // OOM lines in its output in all
  bool library = false;        // a CUDA library's own allocation (cuBLAS, cuDNN, NCCL) failed
  bool operator==(const ProgramMessage&) const = default;
};

// exec: one device's share of a program's run (its budget, its own timeline's figures).
struct DeviceRun {
  int index = 0;  // oomlab's numbering (nvidia-smi's)
  std::string uuid;
  std::uint64_t budget_bytes = 0;
  std::uint64_t ballast_bytes = 0;
  std::uint64_t peak_bytes = 0;       // the program's processes on it at the most (NVML)
  std::uint64_t peak_used_bytes = 0;  // the most it took of its budget (its free memory)
  std::uint64_t first_bytes = 0;
  std::optional<double> full_ms;  // when its use first came within 64 MiB of its budget
  std::string events_file;        // its own rows in the run folder; empty for one device
  bool operator==(const DeviceRun&) const = default;
};

// exec: one rank of a distributed job, as its output, torchrun and its device showed it.
struct RankRun {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> device;  // oomlab's index of the device it ran on
  bool ran_out = false;       // its output reported an OOM
  std::optional<double> oom_ms;
  std::vector<std::string> last_lines;  // its marked lines, the last few
  // Its device's memory grew after the first OOM of the job (it went on working), or not (it
  // waited); none when its device is not known.
  std::optional<bool> memory_rose_after_oom;
  bool operator==(const RankRun&) const = default;
};

// exec: the rank that ran out of memory first, and how that is known.
struct FailingRank {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> device;
  std::optional<double> t_ms;
  std::vector<std::string> evidence;  // each in words: the OOM line's mark, torchrun, the device
  std::vector<int> waiting;           // ranks that did not run out and whose memory stayed
  std::string verdict;                // "rank 1 (GPU 1) ran out of memory at 3.21 s; ..."
  bool operator==(const FailingRank&) const = default;
};

// A program run by `exec`: how it ended and what its device memory did.
// A framework the exec shim saw a program's Python processes import: its name ("torch", "cupy",
// "jax", "rmm"), its version as the framework reports it ("2.11.0+cu130"), and the settings of
// its allocator the process ran with, as the environment spelled them
// ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"; empty: the framework's defaults).
struct FrameworkSeen {
  std::string name;
  std::string version;
  std::string allocator_settings;
  bool operator==(const FrameworkSeen&) const = default;
};

struct ProgramRun {
  std::vector<std::string> command;
  std::vector<int> devices;
  int exit_code = -1;
  int signal = 0;                     // the signal that ended it, 0 when it exited
  bool killed = false;                // it, or what it left, needed SIGKILL
  unsigned leftovers_ended = 0;       // processes still in its group after it exited
  std::uint64_t peak_bytes = 0;       // its processes' device memory at the most (NVML)
  std::uint64_t peak_used_bytes = 0;  // the most it took of its budget (device free memory)
  std::uint64_t first_bytes = 0;      // at the first sample that saw any (its context, being made)
  std::string usage_source;  // "nvml-processes" or "device-free" (NVML cannot see its pids)
  std::uint64_t samples = 0;
  double interval_ms = 0.0;
  std::vector<std::string> last_lines;  // its output's last lines
  std::size_t oom_lines = 0;            // lines of its output that reported an OOM
  std::string stdout_file;              // in the run folder; empty without one
  std::string stderr_file;
  // PyTorch memory snapshots the exec shim wrote, one per process (full paths), and why there
  // is none when there is none ("the program never imported torch", ...).
  std::vector<std::filesystem::path> snapshots;
  std::string snapshot_note;
  // Why the model answered for none of the snapshots, or skipped one ("the model could not
  // answer: ..."): on the summary's model line, and in the search's word on a run it got
  // nothing from.
  std::vector<std::string> model_notes;
  std::vector<FrameworkSeen> frameworks;  // in the order first seen; empty: none, or no shim
  std::vector<DeviceRun> device_runs;     // one per device, in --devices' order
  std::vector<RankRun> ranks;             // a distributed job's ranks (empty for one process)
  std::optional<FailingRank> failing_rank;
  // The job was left waiting after an OOM and ended by oomlab (after --grace, s).
  std::optional<double> waiting_ended_after_s;
  bool operator==(const ProgramRun&) const = default;
};

// Why a run gave the model nothing to read, " (...)": its snapshot's note and the model's own
// ("the model could not answer: ..."); "" where neither says.
[[nodiscard]] inline std::string unread_words(const ProgramRun& p) {
  std::string why = p.snapshot_note;
  for (const std::string& note : p.model_notes)
    why += (why.empty() ? "" : "; ") + note;
  return why.empty() ? why : " (" + why + ")";
}

}  // namespace oomlab
