#include "reports/run/human_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/run/cache_words.hpp"
#include "reports/run/oom_place_text.hpp"
#include "reports/run/program_summary.hpp"

namespace oomlab {

namespace {

std::string metric_text(const std::string& name, double value) {
  const bool is_bytes = name.size() > 6 && name.ends_with("_bytes");
  if (std::isnan(value)) return "none";  // a metric with no value (null in summary.json)
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (is_bytes && value >= 0 && value < 1.8e19)
    return format_bytes(static_cast<std::uint64_t>(value));
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return format_count(static_cast<std::uint64_t>(std::fabs(value)))
        .insert(0, value < 0 ? "-" : "");
  return fmt::format("{:.4g}", value);
}

std::string percent_of(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

void write_header(std::string& out, const RunResult& r) {
  std::string where = "simulated";
  if (r.device) {
    where = fmt::format("{} (device {}, driver {})", r.device->name, r.device->index,
                        r.environment.driver_version.value_or("unknown"));
  }
  fmt::format_to(std::back_inserter(out), "oomlab · {} on {} · budget {} · seed {} · {}\n",
                 r.scenario, r.allocator, format_bytes(r.budget_bytes), r.seed, where);
}

void write_oom(std::string& out, const OomRecord& oom, std::uint64_t budget, bool simulated) {
  auto it = std::back_inserter(out);
  const Diagnosis& d = oom.diagnosis;
  // A replay names the trace's entry (and line), as its notes and metrics do; a run, its event.
  const std::string at =
      oom.trace_entry
          ? fmt::format("trace entry {}{}", format_count(*oom.trace_entry),
                        oom.trace_line ? fmt::format(" (line {})", *oom.trace_line) : std::string())
          : fmt::format("event {}", format_count(oom.event));
  fmt::format_to(it, "request    {} ('{}') at {}, step {}, phase '{}', {:.1f} ms in\n",
                 format_bytes(oom.request_bytes), oom.request_label, at, oom.step, oom.phase,
                 oom.t_ms);
  fmt::format_to(it,
                 "live       {} in {} blocks ({} of the budget) · reserved {} · device free {}\n",
                 format_bytes(oom.live_bytes), format_count(oom.live_count),
                 percent_of(oom.live_bytes, budget), format_bytes(oom.reserved_bytes),
                 format_bytes(oom.device_free_bytes));
  if (oom.largest_free_bytes) {
    const std::string largest = *oom.largest_free_bytes == 0
                                    ? fmt::format("under {}", format_bytes(oom.granularity_bytes))
                                    : format_bytes(*oom.largest_free_bytes);
    fmt::format_to(it, "largest    {} in one block, of {} free · fragmentation {:.1f}%\n", largest,
                   format_bytes(d.free_bytes), 100.0 * d.fragmentation.value_or(0.0));
  } else {
    fmt::format_to(it, "largest    not probed (--no-probe) · {} free in total\n",
                   format_bytes(d.free_bytes));
  }
  fmt::format_to(it, "cause      {} ({}{}): {}\n", to_string(d.cause), oom.source,
                 simulated ? ", simulated" : "", d.evidence);
  fmt::format_to(it, "advice     {}\n", d.advice);
}

// The framework's own figures, as its out-of-memory error gives them.
std::string cache_line(const CacheState& c, const OomRecord& oom) {
  const CacheWords& words = words_of(c);
  const auto size = [&](std::uint64_t bytes) { return size_in(words, bytes); };
  if (c.pool) {
    return fmt::format("cudaMallocAsync backend: {} allocated, requested {}, device limit {}",
                       size(c.allocated_bytes), size(oom.request_bytes),
                       size(oom.device_total_bytes));
  }
  const std::uint64_t unallocated =
      c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0;
  return fmt::format(
      "tried to allocate {} · {} allocated by {} · {} reserved but unallocated{}",
      size(c.failed_device_bytes != 0 ? c.failed_device_bytes : oom.request_bytes),
      size(c.allocated_bytes), words.owner, size(unallocated),
      c.allowed_bytes != 0 ? fmt::format(" · {} allowed", size(c.allowed_bytes)) : "");
}

constexpr std::size_t kFramesShown = 5;

// The replayed program's side of the OOM: where it asked, and its largest live blocks then.
void write_program(std::string& out, const OomRecord& oom) {
  auto it = std::back_inserter(out);
  if (oom.cache) {
    fmt::format_to(it, "{:<10} {}\n", words_of(*oom.cache).key, cache_line(*oom.cache, oom));
  }
  out += oom_where_lines(oom, false);
  const std::size_t shown = std::min(kFramesShown, oom.frames.size());
  for (std::size_t i = 0; i < shown; ++i) {
    fmt::format_to(it, "{:<10} {}{}\n", i == 0 ? "frames" : "", oom.frames[i],
                   i + 1 == shown && oom.frames.size() > shown
                       ? fmt::format(" (+{} more)", oom.frames.size() - shown)
                       : "");
  }
  for (const ProgramBlock& b : oom.largest_live) {
    fmt::format_to(it, "{:<10} {} live since entry {}{}\n",
                   &b == &oom.largest_live.front() ? "blocks" : "", format_bytes(b.bytes),
                   format_count(b.trace_index),
                   b.frames.empty() ? std::string() : " · " + b.frames.front());
  }
  out += oom_holder_lines(oom);
}

void write_integrity(std::string& out, const RunResult& r) {
  auto it = std::back_inserter(out);
  if (r.simulated) {
    fmt::format_to(it, "integrity  not checked: the simulated allocator has no memory\n");
  } else if (r.verify == VerifyMode::off) {
    fmt::format_to(it, "integrity  not checked (--verify=off)\n");
  } else {
    fmt::format_to(it, "integrity  {} block checks ({}) · {} corrupted{}\n",
                   format_count(r.integrity_checked), to_string(r.verify),
                   format_count(r.integrity_corrupted),
                   r.integrity_corrupted > 0
                       ? fmt::format(" ({} words)", format_count(r.integrity_corrupted_words))
                       : "");
  }
}

// Device free memory before and after the run, and what the difference means.
void write_cleanup(std::string& out, const RunResult& r) {
  auto it = std::back_inserter(out);
  if (r.cleanup) {
    const std::int64_t missing = r.cleanup->difference();
    const auto page = static_cast<std::int64_t>(kDevicePageBytes);
    std::string verdict = " (all returned)";
    if (missing > page && !r.cleanup->not_counted.empty()) {
      verdict =
          fmt::format(": {} short, not counted ({})",
                      format_bytes(static_cast<std::uint64_t>(missing)), r.cleanup->not_counted);
    } else if (missing > page) {
      verdict = fmt::format(": {} LEFT BEHIND", format_bytes(static_cast<std::uint64_t>(missing)));
    } else if (missing < -page) {
      verdict = fmt::format(" (all returned; the driver gave back {} of its own)",
                            format_bytes(static_cast<std::uint64_t>(-missing)));
    }
    fmt::format_to(it, "device     free {} before, {} after the run{}\n",
                   format_bytes(r.cleanup->device_free_before),
                   format_bytes(r.cleanup->device_free_after), verdict);
  }
}

// A run that completed although its allocator held more than the budget (PyTorch's
// cudaMallocAsync backend under a fraction caps what it hands out, not what its pool holds).
std::string over_budget_text(const RunResult& r) {
  if (r.outcome != Outcome::completed || r.program || r.peak_reserved_bytes <= r.budget_bytes)
    return {};
  return fmt::format(", over the budget: the allocator held {} at its peak",
                     format_bytes(r.peak_reserved_bytes));
}

}  // namespace

std::string human_summary(const RunResult& r, const std::string& written_to) {
  if (r.program) return program_summary(r, written_to);
  std::string out;
  auto it = std::back_inserter(out);
  write_header(out, r);
  fmt::format_to(it, "outcome    {}{}{}\n", to_string(r.outcome),
                 r.outcome == Outcome::oom && r.simulated ? " (simulated allocator)" : "",
                 over_budget_text(r));
  if (!r.error_message.empty()) fmt::format_to(it, "error      {}\n", r.error_message);
  for (const RunResult::RecentEvent& e : r.last_events) {
    fmt::format_to(it, "{:<10} #{} {} {} -> {} (phase '{}', step {}, live {})\n",
                   &e == &r.last_events.front() ? "last" : "", e.seq, e.op, format_bytes(e.bytes),
                   e.status, e.phase, e.step, format_bytes(e.live_bytes));
  }
  if (r.oom) {
    write_oom(out, *r.oom, r.budget_bytes, r.simulated);
    write_program(out, *r.oom);
  }
  fmt::format_to(it, "peaks      live {} · reserved {}\n", format_bytes(r.peak_live_bytes),
                 format_bytes(r.peak_reserved_bytes));
  fmt::format_to(it, "counts     {} allocations · {} frees · {} failed · {} events in {:.1f} ms\n",
                 format_count(r.allocations), format_count(r.frees), format_count(r.failed),
                 format_count(r.events), r.duration_ms);
  write_integrity(out, r);
  for (const std::string& note : r.notes)
    fmt::format_to(it, "note       {}\n", note);
  if (!r.metrics.empty()) {
    std::string line;
    for (const auto& [name, value] : r.metrics) {
      line += fmt::format("{}{} {}", line.empty() ? "" : " · ", name, metric_text(name, value));
    }
    fmt::format_to(it, "metrics    {}\n", line);
  }
  write_cleanup(out, r);
  if (!written_to.empty()) fmt::format_to(it, "wrote      {}\n", written_to);
  return out;
}

}  // namespace oomlab
