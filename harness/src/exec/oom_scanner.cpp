// The figures that arrive on the lines after an OOM line (read by its dialect), and the scanner
// that keeps the best OOM line of a whole run.
#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "exec/oom_message.hpp"
#include "exec/oom_text.hpp"

namespace oomlab {

bool read_follow_up_figures(ProgramOom& oom, std::string_view line) {
  return oom.follow_up != nullptr && oom.follow_up(oom, line);
}

void note_budget(ProgramOom& oom, std::uint64_t budget_bytes) {
  if (!oom.may_be_retried || !oom.pool_region || !oom.request_bytes ||
      *oom.request_bytes <= budget_bytes)
    return;
  const OomAdvice* advice = oom_advice(oom.framework);
  if (advice != nullptr && !advice->sizing_setting.empty())
    oom.sizing_setting = advice->sizing_setting;
}

namespace {

// "jax.errors.JaxRuntimeError: ...", "RuntimeError: ...": the exception the program died of, as
// its traceback's last line names it (not a log line or a dump that quotes the same words).
bool names_an_exception(std::string_view line) {
  const std::size_t colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view name = line.substr(0, colon);
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
      std::string_view::npos)
    return false;
  return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exhausted");
}

// The figures a logged warning carried (and the lines after it) that the raise which followed
// for the same request does not repeat (XLA's BFC allocator logs its pool, then JAX raises with
// the request alone).
void carry_figures(const ProgramOom& warning, ProgramOom& raised) {
  if (warning.request_bytes && raised.request_bytes) {
    const auto [low, high] = std::minmax(*warning.request_bytes, *raised.request_bytes);
    if (high - low > high / 100) return;  // another request: its figures are not this one's
  }
  const auto take = [](const std::optional<std::uint64_t>& from, std::optional<std::uint64_t>& to) {
    if (!to) to = from;
  };
  take(warning.request_bytes, raised.request_bytes);
  take(warning.device_total_bytes, raised.device_total_bytes);
  take(warning.device_free_bytes, raised.device_free_bytes);
  take(warning.process_used_bytes, raised.process_used_bytes);
  take(warning.framework_allocated_bytes, raised.framework_allocated_bytes);
  take(warning.framework_cached_free_bytes, raised.framework_cached_free_bytes);
  take(warning.framework_limit_bytes, raised.framework_limit_bytes);
  take(warning.framework_largest_free_bytes, raised.framework_largest_free_bytes);
}

}  // namespace

void OomScanner::consider(const ProgramOom& given, bool candidate_is_latest) {
  // A raise of the request the kept line reported takes that line's figures (measured, JAX
  // 0.11.2: its autotuner's failures, HLO fragments ending in XLA's words, each after the pool's
  // warning, then the raise naming one of them): the raise is the OOM, as rich as the line.
  ProgramOom candidate = given;
  if (found_ && !found_->may_be_retried && !candidate.may_be_retried && candidate.request_bytes &&
      names_an_exception(candidate.line) && !names_an_exception(found_->line))
    carry_figures(*found_, candidate);
  const bool same_kind = found_ && found_->may_be_retried == candidate.may_be_retried;
  // On a tie, the line that names the exception raised (measured: JAX 0.8 prints its HLO dump
  // ending in the same RESOURCE_EXHAUSTED words before the JaxRuntimeError line).
  const bool raised_tie = same_kind && candidate.richness() == found_->richness() &&
                          names_an_exception(candidate.line) && !names_an_exception(found_->line);
  const bool replaces = !found_ || (found_->may_be_retried && !candidate.may_be_retried) ||
                        (same_kind && candidate.richness() > found_->richness()) || raised_tie;
  if (replaces) {
    std::vector<TracebackFrame> traceback =
        found_ ? found_->traceback : std::vector<TracebackFrame>{};
    found_ = candidate;
    if (found_->traceback.empty()) found_->traceback = std::move(traceback);
    found_is_latest_ = candidate_is_latest;
  } else if (candidate_is_latest && found_is_latest_) {
    found_ = candidate;  // the kept line itself took more figures
  }
}

void OomScanner::feed_line(std::string_view line) {
  tracebacks_.feed(line);
  if (auto oom = recognise_oom_line(line)) {
    ++lines_seen_;
    if (!tracebacks_.last().empty() && tracebacks_.last() != traced_) {
      oom->traceback = tracebacks_.last();  // the traceback this exception line ended
      traced_ = tracebacks_.last();
    }
    if (sizing_setting_.empty()) sizing_setting_ = oom->sizing_setting;
    // A raise takes what the last logged warning of its request carried (earlier warnings were
    // for requests the program survived: an autotuner's scratch, a retried region).
    if (latest_ && latest_->may_be_retried && !oom->may_be_retried) carry_figures(*latest_, *oom);
    found_is_latest_ = false;
    latest_ = std::move(*oom);
    follow_up_lines_left_ = latest_->follow_up != nullptr ? latest_->follow_up_lines : 0;
    consider(*latest_, true);
    return;
  }
  if (follow_up_lines_left_ > 0 && latest_) {
    --follow_up_lines_left_;
    if (read_follow_up_figures(*latest_, line)) consider(*latest_, true);
  }
}

}  // namespace oomlab
