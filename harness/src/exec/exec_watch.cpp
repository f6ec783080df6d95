#include "exec/exec_watch.hpp"

#include <algorithm>

#include "oomlab/registry.hpp"

namespace oomlab {

namespace {

constexpr std::size_t kRankLastLines = 5;

}  // namespace

ExecWatch::ExecWatch(MemoryTimeline& timeline, std::size_t devices, std::chrono::milliseconds grace)
    : timeline_(timeline), devices_(devices), grace_(grace) {
  for (const Framework& framework : Registry::global().frameworks()) {
    if (framework.launcher && framework.launcher->report != nullptr)
      launchers_.push_back({&*framework.launcher, framework.launcher->report()});
  }
}

std::pair<const Launcher*, const LauncherFailure*> ExecWatch::root_cause() const {
  for (const LauncherSeen& seen : launchers_) {
    if (const LauncherFailure* root = seen.report->root_cause()) return {seen.launcher, root};
  }
  return {nullptr, nullptr};
}

void ExecWatch::hint(std::string_view text) {
  saw_.read(text);
}

void ExecWatch::line(std::string_view text, bool /*from_stderr*/) {
  const std::uint64_t now = timeline_.now_ns();
  last_line_ns_ = now;
  for (const LauncherSeen& seen : launchers_)
    seen.report->feed_line(text);
  const RankMark mark = read_rank_marks(text);
  scanner_.feed_line(mark.text);  // a preallocation is told from a request by the budget, later
  // XLA's own log lines do not say whether JAX or TensorFlow built it; the traceback does.
  hint(text);
  const bool oom = recognise_oom_line(mark.text).has_value();
  const std::optional<int> device = oom ? oom_line_device(mark.text) : std::nullopt;
  if (mark.rank || mark.local_rank) {
    RankOutput& rank = ranks_[mark.rank.value_or(*mark.local_rank)];
    if (mark.local_rank) rank.local_rank = mark.local_rank;
    if (mark.text.find_first_not_of(" \t") != std::string_view::npos) {
      rank.last_lines.emplace_back(mark.text.substr(0, 400));
      if (rank.last_lines.size() > kRankLastLines) rank.last_lines.pop_front();
    }
    if (oom && !rank.oom_ns) {
      rank.oom_ns = now;
      rank.oom_device = device;
    }
  }
  if (oom && !first_oom_) {
    first_oom_ = OomSighting{
        .rank = mark.rank, .local_rank = mark.local_rank, .device = device, .t_ns = now};
  }
  // The OOM's moment is its line's; where the line noted was one a program may survive (a
  // refused region XLA asks again for less) and the scanner now keeps one it may not, again.
  const bool again =
      noted_ && noted_retriable_ && scanner_.found() && !scanner_.found()->may_be_retried;
  if ((!noted_ || again) && scanner_.found()) {
    const ProgramOom& found = *scanner_.found();
    std::optional<std::size_t> own;
    if (device && *device >= 0 && static_cast<std::size_t>(*device) < devices_) own = *device;
    noted_ = timeline_.note_oom(found.request_bytes.value_or(0), stated_by(found), own, again);
    noted_retriable_ = found.may_be_retried;
  }
}

bool ExecWatch::distributed() const {
  if (devices_ > 1 || ranks_.size() > 1) return true;
  if (std::any_of(launchers_.begin(), launchers_.end(),
                  [](const LauncherSeen& s) { return !s.report->failures().empty(); }))
    return true;
  // A mark of rank 1 or more says there is a rank 0 too, even one that printed nothing.
  return std::any_of(ranks_.begin(), ranks_.end(), [](const auto& r) { return r.first > 0; });
}

bool ExecWatch::left_waiting() const {
  if (!first_oom_ || !distributed()) return false;
  const std::uint64_t quiet_since =
      std::max({last_line_ns_, timeline_.last_change_ns(), first_oom_->t_ns});
  const std::uint64_t now = timeline_.now_ns();
  const auto grace_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(grace_).count());
  return now >= quiet_since && now - quiet_since >= grace_ns;
}

}  // namespace oomlab
