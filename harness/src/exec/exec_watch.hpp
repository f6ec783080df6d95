// What `exec` watches while the program runs: each line of its output through the OOM scanner
// (the first OOM line becomes an oom row of the timeline), the rank that wrote it (its rank
// marks; the registered launchers' failure reports), and whether a distributed job has gone quiet
// after an OOM: no output and no device's memory moving for --grace, the other ranks left
// waiting in a collective, which is then ended.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/exec_outcome.hpp"
#include "exec/memory_timeline.hpp"
#include "exec/oom_message.hpp"
#include "exec/program.hpp"
#include "exec/rank_lines.hpp"
#include "oomlab/framework.hpp"

namespace oomlab {

// One rank's output as its marks showed it.
struct RankOutput {
  std::optional<int> local_rank;
  std::deque<std::string> last_lines;
  std::optional<std::uint64_t> oom_ns;  // its first OOM line, on the timeline's clock
  std::optional<int> oom_device;        // the device that line names (the program's numbering)
};

// An OOM line as it came: who marked it, which device it names, when.
struct OomSighting {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> device;  // the program's numbering ("GPU 1")
  std::uint64_t t_ns = 0;
};

class ExecWatch final : public ProgramObserver {
 public:
  ExecWatch(MemoryTimeline& timeline, std::size_t devices, std::chrono::milliseconds grace);
  void started(pid_t pid) override { timeline_.set_program(pid); }
  void line(std::string_view text, bool from_stderr) override;
  // The command itself says, at times (`python jax_job.py`).
  void hint(std::string_view text);
  // A distributed job quiet for --grace since an OOM: polled while it runs.
  [[nodiscard]] bool left_waiting() const;
  // Several ranks are known (marks, a launcher's report, or several devices).
  [[nodiscard]] bool distributed() const;

  [[nodiscard]] const OomScanner& scanner() const { return scanner_; }
  [[nodiscard]] FrameworkHints hints() const { return saw_; }
  [[nodiscard]] const std::optional<std::pair<std::uint64_t, MemoryReading>>& noted() const {
    return noted_;
  }
  // By rank: the global rank where a mark gave it, else the local rank.
  [[nodiscard]] const std::map<int, RankOutput>& ranks() const { return ranks_; }
  [[nodiscard]] const std::optional<OomSighting>& first_oom() const { return first_oom_; }
  // Each registered launcher's report of the job's failed workers (Framework::launcher).
  struct LauncherSeen {
    const Launcher* launcher = nullptr;
    std::unique_ptr<LauncherReport> report;
  };
  [[nodiscard]] const std::vector<LauncherSeen>& launchers() const { return launchers_; }
  // The first root cause a launcher reported, with its launcher; {null, null} when none did.
  [[nodiscard]] std::pair<const Launcher*, const LauncherFailure*> root_cause() const;

 private:
  MemoryTimeline& timeline_;
  std::size_t devices_;
  std::chrono::milliseconds grace_;
  OomScanner scanner_;
  FrameworkHints saw_;
  std::optional<std::pair<std::uint64_t, MemoryReading>> noted_;
  bool noted_retriable_ = false;  // the line noted was one a program may survive
  std::map<int, RankOutput> ranks_;
  std::optional<OomSighting> first_oom_;
  std::vector<LauncherSeen> launchers_;
  std::uint64_t last_line_ns_ = 0;
};

}  // namespace oomlab
