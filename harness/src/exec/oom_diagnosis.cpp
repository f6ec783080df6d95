// What a program's OOM message says about its cause, and the usual remedy for its framework.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "exec/oom_message.hpp"
#include "exec/oom_text.hpp"

namespace oomlab {
namespace {

using oom_text::two_decimal_size;

// The remedy for a framework's cache holding enough free memory in pieces too small: its own
// dialect's words, else the general ones.
std::string fragmentation_advice(std::string_view framework) {
  const OomAdvice* advice = oom_advice(framework);
  if (advice != nullptr && !advice->fragmentation.empty()) return advice->fragmentation;
  return fmt::format(
      "{}'s cache holds enough free memory but not in one piece: allocate the "
      "largest buffers first, or release the cache before the large request",
      framework);
}

// The remedy when the program needs more than the budget holds.
std::string capacity_advice(std::string_view framework) {
  const OomAdvice* advice = oom_advice(framework);
  if (advice != nullptr && !advice->capacity.empty()) return advice->capacity;
  return "reduce the size of the request, or free device memory before it";
}

std::string figures_evidence(const ProgramOom& oom) {
  std::string evidence;
  const auto add = [&](const std::optional<std::uint64_t>& figure, std::string_view what) {
    if (!figure) return;
    if (!evidence.empty()) evidence += ", ";
    evidence += fmt::format("{} {}", two_decimal_size(*figure), what);
  };
  add(oom.request_bytes, "requested");
  add(oom.device_free_bytes, "free on the device");
  add(oom.device_total_bytes, "in total");
  add(oom.process_used_bytes, "used by the process");
  add(oom.framework_allocated_bytes, fmt::format("allocated by {}", oom.framework));
  return evidence;
}

// The framework's cache free (reserved but unallocated) and the device's free memory, beside the
// request: together as large as the request, they are free memory in pieces (fragmentation: the
// framework already gave back its wholly free segments before it raised); smaller, the program
// needs more than there is (capacity).
ProgramOomDiagnosis from_cache_figures(const ProgramOom& oom) {
  const std::uint64_t cached = *oom.framework_cached_free_bytes;
  const std::uint64_t request = *oom.request_bytes;
  const std::uint64_t device_free = oom.device_free_bytes.value_or(0);
  const bool fragmented = cached + device_free >= request;
  std::string evidence;
  if (!oom.device_free_bytes) {
    evidence =
        fmt::format("{} reserved by {} but unallocated {} {} requested", two_decimal_size(cached),
                    oom.framework, fragmented ? ">=" : "<", two_decimal_size(request));
  } else {
    evidence = fmt::format(
        "{} reserved by {} but unallocated + {} free on the device = {} {} {} requested{}",
        two_decimal_size(cached), oom.framework, two_decimal_size(device_free),
        two_decimal_size(cached + device_free), fragmented ? ">=" : "<", two_decimal_size(request),
        fragmented ? ", but in no one piece" : "");
  }
  return {fragmented ? Cause::fragmentation : Cause::capacity, std::move(evidence),
          fragmented ? fragmentation_advice(oom.framework) : capacity_advice(oom.framework)};
}

// A pool with a limit of its own (XLA's BFC allocator): what it may still give (free in it, and
// what it may grow by up to its limit) beside the request. As large as the request, yet no piece
// holds it: fragmentation; smaller: the program needs more than the pool's limit (capacity).
// A pool short of the card: its limit leaves room (`untaken`) that the card does not have beside
// the process's other memory (a large share of a small card: XLA took less than its limit at
// start), and its own free memory does not hold the request either (as far as the summary's two
// decimals tell: within half a hundredth of a unit, 0.5% of the request): capacity of the card,
// not pieces.
ProgramOomDiagnosis from_pool_figures(const ProgramOom& oom,
                                      std::optional<std::uint64_t> budget_free) {
  const std::uint64_t limit = *oom.framework_limit_bytes;
  const std::uint64_t request = *oom.request_bytes;
  const std::uint64_t used = *oom.framework_allocated_bytes;
  const std::uint64_t free = oom.framework_cached_free_bytes.value_or(0);
  const std::uint64_t room = limit > used ? limit - used : 0;
  const std::uint64_t untaken = room > free ? room - free : 0;
  const bool card_short = budget_free && *budget_free < untaken && *budget_free < request;
  if (room >= request && card_short && free < request + request / 200) {
    return {Cause::capacity,
            fmt::format("{} free in {}'s pool for {} requested, and {} left on the card: its "
                        "limit ({}) would let it take {} more, which the card does not have "
                        "beside the process's other memory",
                        two_decimal_size(free), oom.framework, two_decimal_size(request),
                        two_decimal_size(*budget_free), two_decimal_size(limit),
                        two_decimal_size(untaken)),
            capacity_advice(oom.framework)};
  }
  if (room >= request) {
    return {Cause::fragmentation,
            fmt::format("{} of {}'s pool limit ({}) is free: {} in its pool{}{}, >= {} requested, "
                        "but in no one piece",
                        two_decimal_size(room), oom.framework, two_decimal_size(limit),
                        two_decimal_size(free),
                        oom.framework_largest_free_bytes
                            ? fmt::format(" (its largest piece {})",
                                          two_decimal_size(*oom.framework_largest_free_bytes))
                            : std::string(),
                        untaken > 0
                            ? fmt::format(" and {} it may still take", two_decimal_size(untaken))
                            : std::string(),
                        two_decimal_size(request)),
            fragmentation_advice(oom.framework)};
  }
  return {Cause::capacity,
          fmt::format("{} in use + {} requested = {} > {}'s pool limit {}", two_decimal_size(used),
                      two_decimal_size(request), two_decimal_size(used + request), oom.framework,
                      two_decimal_size(limit)),
          capacity_advice(oom.framework)};
}

}  // namespace

ProgramOomDiagnosis diagnose_program_oom(const ProgramOom& oom,
                                         std::optional<std::uint64_t> budget_free) {
  if (!oom.sizing_setting.empty()) {
    return {Cause::capacity,
            fmt::format("{} sizes its memory pool from the device's total memory, more than the "
                        "budget leaves it",
                        oom.framework),
            fmt::format("set {}", oom.sizing_setting)};
  }
  if (oom.request_bytes && oom.framework_limit_bytes && oom.framework_allocated_bytes)
    return from_pool_figures(oom, budget_free);
  if (oom.request_bytes && oom.framework_cached_free_bytes) return from_cache_figures(oom);
  if (oom.richness() == 0) {
    return {Cause::capacity, "the message carries no figures", capacity_advice(oom.framework)};
  }
  return {Cause::capacity, figures_evidence(oom), capacity_advice(oom.framework)};
}

}  // namespace oomlab
