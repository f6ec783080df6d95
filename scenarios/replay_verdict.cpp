#include "replay_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// A metric with no value (a line, for a binary format): null in summary.json.
constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

}  // namespace

std::string describe_place(const trace::Event& e) {
  if (e.preexisting) return "a block live when the trace began";
  return fmt::format("entry {}{}, {:.6f} s into the trace", format_count(e.index),
                     e.line != 0 ? fmt::format(" (line {})", e.line) : std::string(),
                     static_cast<double>(e.t_ns) / 1e9);
}

ReplayVerdict::ReplayVerdict(const trace::Trace& trace)
    : trace_(trace),
      program_first_failure_(trace.demand.first_failure_at),
      program_failures_(trace.demand.failures),
      program_fatal_(trace::fatal_failure_at(trace)),
      fatal_failures_(trace.demand.failures - trace::survived_failure_sizes(trace).size()),
      peak_live_{trace.demand.peak_live_bytes, trace.demand.peak_live_at},
      peak_with_failed_{trace.demand.peak_with_failed_bytes, trace.demand.peak_with_failed_at} {
}

void ReplayVerdict::seen(std::uint32_t position) {
  if (first_failure_ == kNowhere) first_failure_ = position;
}

void ReplayVerdict::broke(std::uint32_t position) {
  seen(position);
  if (broke_at_ == kNowhere) broke_at_ = position;
}

void ReplayVerdict::reproduced(std::uint32_t position) {
  seen(position);
  if (reproduced_++ == 0) first_reproduced_ = position;
}

void ReplayVerdict::refused_again(std::uint32_t position) {
  seen(position);
  if (refused_again_++ == 0) first_refused_again_ = position;
}

void ReplayVerdict::report(RunContext& ctx) const {
  ctx.metric("trace_failures", static_cast<double>(program_failures_));
  if (program_first_failure_ != kNowhere) {
    ctx.metric("trace_first_failure_index", static_cast<double>(at(program_first_failure_).index));
    ctx.metric("trace_first_failure_bytes", static_cast<double>(at(program_first_failure_).bytes));
  }
  ctx.metric("reproduced_failures", static_cast<double>(reproduced_));
  if (first_failure_ != kNowhere) {
    ctx.metric("first_failure_index", static_cast<double>(at(first_failure_).index));
    ctx.metric("first_failure_line", at(first_failure_).line != 0
                                         ? static_cast<double>(at(first_failure_).line)
                                         : kNoValue);
    ctx.metric("first_failure_t_ns", static_cast<double>(at(first_failure_).t_ns));
  }
  if (first_failure_ != kNowhere || program_first_failure_ != kNowhere) {
    // The OOM the run reports is the failure that ended the program, made again.
    const bool same = broke_at_ == kNowhere && first_reproduced_ != kNowhere &&
                      first_reproduced_ == program_fatal_;
    ctx.metric("failed_at_same_place", same ? 1.0 : 0.0);
  }
  ctx.metric("peak_live_bytes", static_cast<double>(peak_live_.bytes));
  ctx.metric("peak_with_failed_bytes", static_cast<double>(peak_with_failed_.bytes));
  if (broke_at_ != kNowhere) {
    ctx.note(broke_note());
  } else if (first_reproduced_ != kNowhere) {
    ctx.note(reproduced_note());
  } else if (program_fatal_ != kNowhere) {
    ctx.note(fmt::format(
        "the program failed at {} ({}), and the replay did not: it fits this budget and allocator",
        describe_place(at(program_fatal_)), format_bytes(at(program_fatal_).bytes)));
  }
  if (peak_live_.at != kNowhere) ctx.note(peaks_note());
}

// The replay ended on a request the program got: how that stands beside the program's own
// failures, before it (made again: failed again or not) and after it (never reached).
std::string ReplayVerdict::broke_note() const {
  std::string program;
  const std::uint32_t first = program_fatal_;
  if (first == kNowhere && refused_again_ > 0) {
    program = fmt::format(
        "before it, {} request(s) the program survived being refused were refused here too (the "
        "first at {}), and the replay went on as the program did",
        refused_again_, describe_place(at(first_refused_again_)));
  } else if (first == kNowhere) {
    program = program_failures_ > 0 ? "the program never failed for good (it survived every "
                                      "refusal in its trace)"
                                    : "the program never failed";
  } else if (first > broke_at_) {
    program = fmt::format("the program failed later, at {}", describe_place(at(first)));
  } else if (reproduced_ > 0) {
    program = fmt::format(
        "before it, {} of the program's own failed requests failed again (the OOM reproduced), "
        "the first at {}",
        reproduced_, describe_place(at(first_reproduced_)));
  } else {
    program = fmt::format("the program's own failed requests before it fit here (the first at {})",
                          describe_place(at(first)));
  }
  return fmt::format("the replay broke at {}: a request of {} that the program got; {}",
                     describe_place(at(broke_at_)), format_bytes(at(broke_at_).bytes), program);
}

// Only the program's own failed requests failed: the OOM reproduced.
std::string ReplayVerdict::reproduced_note() const {
  // The program's first failure it did not survive (the same as its first failure but for
  // refusals it survived).
  const std::string where = first_reproduced_ == program_fatal_
                                ? std::string("where the program first failed")
                                : fmt::format("the program's first failure, at {}, fits here",
                                              describe_place(at(program_fatal_)));
  const std::string count = fatal_failures_ > 1
                                ? fmt::format(" ({} of its {} failed requests failed again)",
                                              reproduced_, fatal_failures_)
                                : std::string();
  return fmt::format(
      "the OOM reproduced: the program's own failed request of {}, at {}, failed again, {}{}; "
      "every request the program got was served",
      format_bytes(at(first_reproduced_).bytes), describe_place(at(first_reproduced_)), where,
      count);
}

std::string ReplayVerdict::peaks_note() const {
  std::string note = fmt::format("the trace's own demand peaks at {} live, at {}",
                                 format_bytes(peak_live_.bytes), describe_place(at(peak_live_.at)));
  if (program_failures_ > 0) {
    note += fmt::format("; with its failed requests made again, {} at {}",
                        format_bytes(peak_with_failed_.bytes),
                        describe_place(at(peak_with_failed_.at)));
  }
  return note;
}

}  // namespace oomlab
