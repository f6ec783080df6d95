#include "reports/run/verdict_changes.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "oomlab/units.hpp"
#include "oomlab/version.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

namespace {

std::string version_words(const std::string& version, const std::string& git) {
  if (version.empty() && git.empty()) return "an unknown oomlab";
  return fmt::format("{} (git {})", version.empty() ? "?" : version, git.empty() ? "?" : git);
}

std::string quoted(const std::string& text) {
  return text.empty() ? "none" : "'" + text + "'";
}

// "cause: capacity -> fragmentation", when they differ.
void add_if_changed(std::vector<std::string>& out, std::string_view what, const std::string& was,
                    const std::string& now) {
  if (was != now) out.push_back(fmt::format("{}: {} → {}", what, was, now));
}

std::string outcome_words(const RunResult& r) {
  return std::string(to_string(r.outcome));
}

std::string place_words(const OomRecord& oom) {
  return oom.trace_entry ? fmt::format("trace entry {}", format_count(*oom.trace_entry))
                         : std::string();
}

void oom_changes(const RunResult& stored, const RunResult& now, std::vector<std::string>& out) {
  if (!stored.oom || !now.oom) return;
  const OomRecord& a = *stored.oom;
  const OomRecord& b = *now.oom;
  add_if_changed(out, "the failing request", place_words(a), place_words(b));
  add_if_changed(out, "cause", std::string(to_string(a.diagnosis.cause)),
                 std::string(to_string(b.diagnosis.cause)));
  if (a.diagnosis.evidence != b.diagnosis.evidence)
    out.push_back(fmt::format("its evidence now: {}", quoted(b.diagnosis.evidence)));
  if (a.diagnosis.advice != b.diagnosis.advice)
    out.push_back(fmt::format("advice now: {}", quoted(b.diagnosis.advice)));
  add_if_changed(out, "the user's line", quoted(a.user_frame), quoted(b.user_frame));
}

// The card for the whole process as a report prints it: "≥ " where it is a lower bound.
std::string card_words(const ModelRow& row, bool lower_bound) {
  if (!row.frontier_bytes) return "none";
  return (lower_bound ? "≥ " : "") + format_bytes(*row.frontier_bytes);
}

std::string at_budget_words(const ModelRow& row) {
  if (row.completes_at_budget) return "completes";
  return row.first_failure_index
             ? fmt::format("OOM at entry {}", format_count(*row.first_failure_index))
             : std::string("OOM");
}

void row_changes(const ProgramModel& a, const ProgramModel& b, std::vector<std::string>& out) {
  for (const ModelRow& now : b.whatif) {
    for (const ModelRow& was : a.whatif) {
      if (was.setting != now.setting) continue;
      add_if_changed(out, fmt::format("{} at the model's budget", now.setting),
                     at_budget_words(was), at_budget_words(now));
      const bool moved =
          was.frontier_bytes.has_value() != now.frontier_bytes.has_value() ||
          (was.frontier_bytes && now.frontier_bytes &&
           std::llabs(static_cast<long long>(*was.frontier_bytes) -
                      static_cast<long long>(*now.frontier_bytes)) > static_cast<long long>(2_MiB));
      if (moved) {  // a bound that became one is said once, for every row
        add_if_changed(out, fmt::format("{}'s card", now.setting), card_words(was, a.lower_bound),
                       card_words(now, b.lower_bound));
      }
    }
  }
}

void model_changes(const RunResult& stored, const RunResult& now, std::vector<std::string>& out) {
  if (stored.models.empty() != now.models.empty()) {
    out.push_back(
        now.models.empty()
            ? "the model: no snapshot could be modelled now (see the notices)"
            : fmt::format("the model: {} snapshot(s) modelled, none before", now.models.size()));
    return;
  }
  if (now.models.empty()) return;
  const ProgramModel& a = stored.models.front();
  const ProgramModel& b = now.models.front();
  add_if_changed(out, "the model", quoted(a.reproduction), quoted(b.reproduction));
  if (a.lower_bound != b.lower_bound) {
    out.push_back(b.lower_bound ? "the model's answers are lower bounds now (its snapshot stops "
                                  "where the program died)"
                                : "the model's answers are no longer lower bounds");
  }
  if (a.outside_allocator_bytes != b.outside_allocator_bytes) {
    add_if_changed(out, "outside the allocator", format_bytes(a.outside_allocator_bytes),
                   format_bytes(b.outside_allocator_bytes));
  }
  const bool advice_said = now.oom && now.oom->diagnosis.advice == b.advice;  // said above
  if (a.advice != b.advice && !advice_said)
    out.push_back(fmt::format("the model's advice now: {}", quoted(b.advice)));
  row_changes(a, b, out);
}

}  // namespace

std::string this_oomlab() {
  constexpr bool kDirty = OOMLAB_GIT_DIRTY;
  return version_words(OOMLAB_VERSION, std::string(OOMLAB_GIT_SHA) + (kDirty ? "-dirty" : ""));
}

std::string written_by(const ReportEnvironment& env) {
  return version_words(env.oomlab_version, env.oomlab_git);
}

bool written_by_another(const ReportEnvironment& env) {
  return written_by(env) != this_oomlab();
}

std::string other_version_line(const RunReport& run) {
  if (!written_by_another(run.platform)) return {};
  return fmt::format(
      "This record's verdicts are those of oomlab {}, which wrote it, not this oomlab's, {}: "
      "`oomlab report --remodel {}` re-diagnoses it with this one",
      written_by(run.platform), this_oomlab(), run.dir.empty() ? "DIR" : run.dir.string());
}

std::vector<std::string> verdict_changes(const RunResult& stored, const RunResult& now) {
  std::vector<std::string> out;
  add_if_changed(out, "outcome", outcome_words(stored), outcome_words(now));
  oom_changes(stored, now, out);
  model_changes(stored, now, out);
  return out;
}

}  // namespace oomlab
