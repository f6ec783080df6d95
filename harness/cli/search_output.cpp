#include "cli/search_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <span>

#include "cli/commands.hpp"
#include "cli/out_folder.hpp"
#include "cli/output_flag.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// "oom (fragmentation)"; a CUDA library's own OOM beside the allocator, "oom (in cuBLAS)": its
// cause is not the allocator's.
std::string how_it_ended(const Trial& t) {
  if (!t.library.empty()) return fmt::format("{} (in {})", to_string(t.outcome), t.library);
  return std::string(to_string(t.outcome)) +
         (t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
}

}  // namespace

std::string clip(const std::string& text, std::size_t most) {
  return text.size() <= most ? text : text.substr(0, most - 3) + "...";
}

std::string budget_trial_line(const Trial& t) {
  return fmt::format("  {:>17} B  {:<11} {}", format_count(t.budget_bytes),
                     "(" + format_bytes(t.budget_bytes) + ")", how_it_ended(t));
}

std::string program_trial_line(const Trial& t) {
  return fmt::format("{:<10} {:>17} B  {:<11} {:<25} {:>6.1f} s  peak {}{}{}", to_string(t.role),
                     format_count(t.budget_bytes), "(" + format_bytes(t.budget_bytes) + ")",
                     how_it_ended(t), t.seconds, format_bytes(t.peak_bytes),
                     t.verifies_prediction ? "  (verifies the prediction)" : "",
                     t.message.empty() ? std::string() : "  " + clip(t.message, 110));
}

std::string value_trial_line(const std::string& name, const Trial& t) {
  const std::string needed =
      t.request_bytes ? fmt::format(", asked {} more", format_bytes(*t.request_bytes)) : "";
  return fmt::format("{:<10} {:>20}  {:<25} {:>6.1f} s  peak {} of {}{}{}{}", to_string(t.role),
                     fmt::format("{}={}", name, t.value), how_it_ended(t), t.seconds,
                     format_bytes(std::max(t.peak_bytes, t.used_bytes)),
                     format_bytes(t.budget_bytes), needed,
                     t.verifies_prediction ? "  (verifies the prediction)" : "",
                     t.message.empty() ? std::string() : "  " + clip(t.message, 110));
}

std::string cards_line(std::uint64_t bytes, std::uint64_t kept_back) {
  const std::vector<std::string> names = card_names_holding(bytes, kept_back);
  const std::string how = fmt::format(
      "(named cards: each one's NVML total less the {} the driver keeps back here when idle; "
      "approximations, see oomlab list --cards)",
      format_bytes(kept_back));
  if (names.empty())
    return fmt::format("no card of the table holds {} {}", format_bytes(bytes), how);
  return fmt::format("cards that hold {}: {} {}", format_bytes(bytes), fmt::join(names, ", "), how);
}

void prepare_out_folder(const std::string& out, bool force, std::string_view file_name) {
  if (out.empty()) return;
  const std::array<std::string_view, 3> files = {file_name, "report.html", "report.md"};
  claim_out_folder(out, force,
                   {.what = file_name == "fit.json" ? "a fit" : "a frontier",
                    .marks = std::span(files).first(1),
                    .replaced = files});
}

void write_search_json(const std::string& json_flag, const std::string& out_folder,
                       const std::string& file_name, const std::string& text, std::ostream& out) {
  const auto write = [](const std::string& flag, const fs::path& path, const std::string& body) {
    try {
      write_output_file(path, body);
    } catch (const Error& e) {
      throw Error(ErrorKind::io, fmt::format("{}: {}", flag, e.what()));
    }
  };
  if (to_stdout(json_flag)) out << text;
  if (to_file(json_flag)) write("--json", json_flag, text);
  if (!out_folder.empty()) write("--out", fs::path(out_folder) / file_name, text);
}

}  // namespace oomlab::cli

namespace oomlab::cli {

namespace {

std::string runs_text(std::size_t n) {
  return fmt::format("{} run{}", n, n == 1 ? "" : "s");
}

// What the value above the answer needed: its OOM's request and cause, or how it ended.
std::string needed(const Trial& t) {
  std::string out = std::string(to_string(t.outcome));
  if (t.cause) out += fmt::format(" ({})", to_string(*t.cause));
  if (t.request_bytes) out += fmt::format(", asking {} more", format_bytes(*t.request_bytes));
  if (!t.message.empty()) out += ": " + clip(t.message, 110);
  return out;
}

// A search over traces made from a series ran nothing: its trials are replays of the model.
std::string trials_text(const FitResult& r) {
  if (r.made_from.empty()) return runs_text(r.runs());
  return fmt::format("{} replay{} of the made traces, nothing run", r.runs(),
                     r.runs() == 1 ? "" : "s");
}

std::string prediction_verdict(const FitResult& r) {
  if (!r.predicted || !r.answer || !r.made_from.empty()) return "";
  if (*r.predicted == *r.answer) return "; the model's prediction held";
  return fmt::format("; the model predicted {}={}", r.range.name, *r.predicted);
}

std::string answer_line(const FitResult& r, const std::string& subject) {
  const std::string& name = r.range.name;
  const std::string budget =
      fmt::format("{} ({} B)", format_bytes(r.budget_bytes), format_count(r.budget_bytes));
  const Trial& last = r.trials.back();
  if (r.timed_out) {
    return fmt::format("{}: the run at {}={} passed --timeout: the search stopped there ({})",
                       subject, name, last.value, trials_text(r));
  }
  if (!r.stopped.empty()) {
    return fmt::format(
        "{}: the run at {}={} failed for another reason than memory (exit {}), so the search "
        "stopped there ({}): {}",
        subject, name, last.value, last.exit_code, trials_text(r), clip(r.stopped, 200));
  }
  if (!r.answer) {
    return fmt::format("{}: does not complete even at {}={} under {}: {}", subject, name,
                       r.range.lo, budget, needed(r.trials.front()));
  }
  const Trial* at = r.at_answer();
  const std::uint64_t peak = at != nullptr ? std::max(at->peak_bytes, at->used_bytes) : 0;
  const std::string headroom = fmt::format("peak {} at it, headroom {}", format_bytes(peak),
                                           format_bytes(r.headroom_at(peak)));
  if (!r.beyond) {
    return fmt::format(
        "{}: every value up to {}={} completes under {}: no OOM in the range ({}; "
        "{})",
        subject, name, *r.answer, budget, trials_text(r), headroom);
  }
  const Trial* next = r.at_beyond();
  return fmt::format(
      "{}: {}={} is the largest that completes under {}; {}={} does not: {} ({}{}; "
      "{})",
      subject, name, *r.answer, budget, name, *r.beyond, next != nullptr ? needed(*next) : "",
      trials_text(r), prediction_verdict(r), headroom);
}

}  // namespace

std::string fit_answer(const FitResult& r, const std::string& subject) {
  std::string out = answer_line(r, subject);
  const Confirmation& c = r.confirmation;
  if (c.runs > 0 && r.answer) {
    out += fmt::format("\nconfirmed: {} of {} completed at {}={}", c.answer_completed, c.runs,
                       r.range.name, *r.answer);
    if (r.beyond) {
      out +=
          fmt::format(", {} of {} at {}={}", c.beyond_completed, c.runs, r.range.name, *r.beyond);
    }
  }
  if (r.not_monotonic) {
    const Trial& failed = r.not_monotonic->first;
    const Trial& completed = r.not_monotonic->second;
    out += fmt::format(
        "\nnot monotonic: {}={} ran out of memory ({} run, {:.1f} s) and then completed ({} run, "
        "{:.1f} s): the runs contradict each other, so the answer is not to be trusted",
        r.range.name, failed.value, to_string(failed.role), failed.seconds,
        to_string(completed.role), completed.seconds);
  }
  return out;
}

}  // namespace oomlab::cli
