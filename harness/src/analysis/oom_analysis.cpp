#include "analysis/oom_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

std::string_view to_string(Cause cause) {
  switch (cause) {
    case Cause::capacity:
      return "capacity";
    case Cause::fragmentation:
      return "fragmentation";
    case Cause::leak:
      return "leak";
    case Cause::external_pressure:
      return "external-pressure";
    case Cause::transient:
      return "transient";
  }
  return "?";
}

LeakFit fit_leak(std::span<const StepSample> samples, std::uint64_t budget_bytes) {
  LeakFit fit;
  fit.samples = samples.size();
  if (samples.size() < 2) return fit;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (const auto& s : samples) {
    mean_x += static_cast<double>(s.step);
    mean_y += static_cast<double>(s.live_bytes);
  }
  const auto n = static_cast<double>(samples.size());
  mean_x /= n;
  mean_y /= n;
  double sxx = 0.0;
  double sxy = 0.0;
  double syy = 0.0;
  for (const auto& s : samples) {
    const double dx = static_cast<double>(s.step) - mean_x;
    const double dy = static_cast<double>(s.live_bytes) - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx == 0.0) return fit;
  fit.bytes_per_step = sxy / sxx;
  fit.r_squared = syy == 0.0 ? 0.0 : (sxy * sxy) / (sxx * syy);
  const auto [lowest, highest] =
      std::minmax_element(samples.begin(), samples.end(),
                          [](const StepSample& a, const StepSample& b) { return a.step < b.step; });
  const auto span = static_cast<double>(highest->step - lowest->step);
  const double growth = fit.bytes_per_step * span;
  fit.detected = samples.size() >= kLeakMinSamples && fit.bytes_per_step > 0.0 &&
                 fit.r_squared >= 0.9 && growth >= 0.05 * static_cast<double>(budget_bytes);
  fit.intercept_bytes = mean_y - fit.bytes_per_step * mean_x;
  if (fit.bytes_per_step > 0.0) {
    fit.predicted_oom_step =
        (static_cast<double>(budget_bytes) - fit.intercept_bytes) / fit.bytes_per_step;
  }
  return fit;
}

namespace {

std::string largest_text(std::uint64_t largest, std::uint64_t granularity) {
  return largest == 0 ? fmt::format("under {}", format_bytes(granularity)) : format_bytes(largest);
}

}  // namespace

namespace {

bool describe_external_or_leak(const OomEvidence& e, Diagnosis& d) {
  const std::uint64_t shrink =
      e.device_free_at_start > e.device_free_now ? e.device_free_at_start - e.device_free_now : 0;
  const std::uint64_t lost = shrink > e.own_bytes_bound ? shrink - e.own_bytes_bound : 0;
  // Others may also have taken part of the budget before the run's baseline was read (processes
  // placing their ballasts at once): the device then had less free than the budget at the start.
  const std::uint64_t withheld =
      e.budget_bytes > e.device_free_at_start ? e.budget_bytes - e.device_free_at_start : 0;
  d.external_bytes = lost + withheld;
  const std::uint64_t threshold = std::max<std::uint64_t>(32_MiB, e.budget_bytes / 100);
  if (e.real_device && d.external_bytes > threshold) {
    d.cause = Cause::external_pressure;
    d.evidence =
        withheld == 0
            ? fmt::format(
                  "device free memory fell by {} during the run, {} more than this run can hold "
                  "({})",
                  format_bytes(shrink), format_bytes(lost), format_bytes(e.own_bytes_bound))
            : fmt::format(
                  "the device had {} free when the run began, {} short of its {} budget, and "
                  "fell by {} more than this run can hold ({}) during it",
                  format_bytes(e.device_free_at_start), format_bytes(withheld),
                  format_bytes(e.budget_bytes), format_bytes(lost),
                  format_bytes(e.own_bytes_bound));
    d.advice = fmt::format(
        "another process took {} of device memory: run alone, or lower the budget to what is left",
        format_bytes(d.external_bytes));
    return true;
  }
  if (e.leak.detected) {
    d.cause = Cause::leak;
    d.evidence = fmt::format("live bytes at step boundaries grow by {}/step (r² {:.3f}, {} steps)",
                             format_bytes(static_cast<std::uint64_t>(e.leak.bytes_per_step)),
                             e.leak.r_squared, e.leak.samples);
    d.advice =
        "free what each step keeps alive: store loss.item(), not the loss tensor; bound caches; "
        "clear gradients (zero_grad(set_to_none=True))";
    return true;
  }
  return false;
}

constexpr std::string_view kCapacityAdvice =
    "it cannot fit whatever the allocator: lower the batch or sequence length, use mixed precision "
    "or activation checkpointing, or give the job more memory";

}  // namespace

namespace {

// Capacity in whole pages: the live blocks' pages and the request's together exceed `limit`, so
// no placement of the same blocks would have served it (what the allocator can give, pages
// included), although the bytes alone would fit.
bool describe_page_capacity(const OomEvidence& e, std::uint64_t limit, std::string_view what,
                            Diagnosis& d) {
  if (!e.live_footprint_bytes || !e.request_footprint_bytes) return false;
  const std::uint64_t needed = *e.live_footprint_bytes + *e.request_footprint_bytes;
  if (needed <= limit) return false;
  d.cause = Cause::capacity;
  d.evidence = fmt::format(
      "live {} takes {} in whole pages and the request {} takes {}: {} > {} {} (the allocator "
      "hands out pages, so no placement fits it)",
      format_bytes(e.live_bytes), format_bytes(*e.live_footprint_bytes),
      format_bytes(e.request_bytes), format_bytes(*e.request_footprint_bytes), format_bytes(needed),
      what, format_bytes(limit));
  d.advice = std::string(kCapacityAdvice);
  return true;
}

constexpr std::string_view kFragmentationAdvice =
    "memory is free but scattered: allocate long-lived buffers first and together, or let the "
    "allocator remap pages (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; a pool with a "
    "release threshold, trimmed)";

// A refusal by oomlab's cap: capacity when what is live cannot take the request under the cap;
// fragmentation when it could, but the memory held against the cap (pages that freed blocks
// share with live ones) leaves no room.
void describe_cap_refusal(const OomEvidence& e, Diagnosis& d) {
  if (e.request_bytes > d.free_bytes) {
    d.cause = Cause::capacity;
    d.evidence = fmt::format("live {} + request {} > cap {} (the budget less room for the driver)",
                             format_bytes(e.live_bytes), format_bytes(e.request_bytes),
                             format_bytes(e.cap_bytes));
    d.advice = std::string(kCapacityAdvice);
    return;
  }
  if (describe_page_capacity(e, e.cap_bytes, "cap", d)) return;
  d.cause = Cause::fragmentation;
  d.evidence = fmt::format(
      "live {} + request {} fit under the cap {}, but {} is held against it: freed blocks' pages "
      "stay while a neighbour lives",
      format_bytes(e.live_bytes), format_bytes(e.request_bytes), format_bytes(e.cap_bytes),
      format_bytes(e.cap_charged_bytes));
  d.advice = std::string(kFragmentationAdvice);
}

}  // namespace

namespace {

// Where no framework registered words for the allocator's state: the engine's own.
const CacheWords& engine_words() {
  static const CacheWords kWords{
      .owner = "the caching allocator",
      .fragmentation_advice =
          "the allocator's cache holds memory it cannot reuse for this request: let it remap or "
          "not split its freed segments",
      .pool_fragmentation_advice =
          "the pool cannot give back chunks in which a block still lives: free long-lived "
          "blocks together"};
  return kWords;
}

const CacheWords& words_of(const CacheState& c) {
  const CacheWords* words = Registry::global().cache_words(c.framework);
  return words != nullptr ? *words : engine_words();
}

// Fragmentation where a model of a framework's caching allocator was in front of the device:
// inside its cache (what it reserved but did not hand out is more than the request) or between
// the cache and the device (together they hold it, neither alone).
void describe_cache_fragmentation(const OomEvidence& e, Diagnosis& d) {
  const CacheState& c = *e.cache;
  const CacheWords& words = words_of(c);
  const std::uint64_t unallocated =
      c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0;
  if (c.pool) {
    d.evidence = fmt::format(
        "{} free in total >= request {}, but the cudaMallocAsync pool's chunks that hold it each "
        "keep a live block (the pool reserves {})",
        format_bytes(d.free_bytes), format_bytes(e.request_bytes), format_bytes(c.reserved_bytes));
    d.advice = words.pool_fragmentation_advice;
    return;
  }
  // Under a fraction the allocator refuses at its cap, whatever the device has free.
  const std::string beside =
      c.allowed_bytes > 0 ? fmt::format("{} left under its fraction cap of {}",
                                        format_bytes(c.allowed_bytes > c.reserved_bytes
                                                         ? c.allowed_bytes - c.reserved_bytes
                                                         : 0),
                                        format_bytes(c.allowed_bytes))
                          : fmt::format("{} free on the device", format_bytes(e.device_free_now));
  d.evidence =
      unallocated >= e.request_bytes
          ? fmt::format(
                "{} reserved {} but allocated {}: {} cached, more than the request "
                "{}, in blocks none of which fits it (fragmentation inside the cache)",
                words.owner, format_bytes(c.reserved_bytes), format_bytes(c.allocated_bytes),
                format_bytes(unallocated), format_bytes(e.request_bytes))
          : fmt::format(
                "{} cached by {} (reserved {}, allocated {}) and {} hold the "
                "request {} together, but neither alone{}",
                format_bytes(unallocated), words.owner, format_bytes(c.reserved_bytes),
                format_bytes(c.allocated_bytes), beside, format_bytes(e.request_bytes),
                c.failed_device_bytes != 0
                    ? fmt::format(" (a new segment needs {})", format_bytes(c.failed_device_bytes))
                    : std::string());
  d.advice = words.fragmentation_advice;
}

// A model of a caching allocator was in front: capacity in its own arithmetic (its blocks in use
// and the request as it rounds them, against what it may hold: the fraction's cap, or what it
// reserved plus what the device still has), since no setting of it places them in less; else
// fragmentation inside or beside its cache.
void describe_cache_oom(const OomEvidence& e, Diagnosis& d) {
  const CacheState& c = *e.cache;
  const std::uint64_t request =
      c.failed_request_bytes != 0 ? c.failed_request_bytes : e.request_bytes;
  const std::uint64_t usable =
      c.allowed_bytes > 0 ? c.allowed_bytes : c.reserved_bytes + e.device_free_now;
  d.free_bytes = usable > c.allocated_bytes ? usable - c.allocated_bytes : 0;
  if (c.allocated_bytes + request > usable) {
    d.cause = Cause::capacity;
    d.evidence = fmt::format(
        "{}'s blocks in use take {} and the request {}: {} > the {} {} (no setting of its "
        "allocator places them in less)",
        words_of(c).owner, format_bytes(c.allocated_bytes), format_bytes(request),
        format_bytes(c.allocated_bytes + request), format_bytes(usable),
        c.allowed_bytes > 0 ? "of its fraction cap"
                            : "it can hold (reserved + free on the device)");
    const std::string& own = words_of(c).capacity_advice;
    d.advice = own.empty() ? std::string(kCapacityAdvice) : own;
    return;
  }
  d.cause = Cause::fragmentation;
  describe_cache_fragmentation(e, d);
}

}  // namespace

Diagnosis diagnose(const OomEvidence& e) {
  Diagnosis d;
  const std::uint64_t limit =
      e.cap_bytes > 0 ? std::min(e.cap_bytes, e.budget_bytes) : e.budget_bytes;
  d.free_bytes = limit > e.live_bytes ? limit - e.live_bytes : 0;
  if (e.live_footprint_bytes && e.request_footprint_bytes) {
    d.footprint_bytes = *e.live_footprint_bytes + *e.request_footprint_bytes;
  }
  if (e.largest_free_bytes && d.free_bytes > 0) {
    d.fragmentation = std::clamp(
        1.0 - static_cast<double>(*e.largest_free_bytes) / static_cast<double>(d.free_bytes), 0.0,
        1.0);
  }
  if (describe_external_or_leak(e, d)) return d;
  if (e.expected_peak_bytes > limit) {
    d.cause = Cause::capacity;
    d.evidence = fmt::format(
        "the scenario's own model needs {} at this part's peak (in 2 MiB pages), more than the {} "
        "{}: no allocator could hold it",
        format_bytes(e.expected_peak_bytes), e.cap_bytes > 0 ? "cap" : "budget",
        format_bytes(limit));
    d.advice = std::string(kCapacityAdvice);
    return d;
  }
  if (e.cache) {
    describe_cache_oom(e, d);
  } else if (e.cap_bytes > 0) {
    describe_cap_refusal(e, d);
  } else if (e.request_bytes > d.free_bytes) {
    d.cause = Cause::capacity;
    d.evidence = fmt::format("live {} + request {} > budget {}", format_bytes(e.live_bytes),
                             format_bytes(e.request_bytes), format_bytes(e.budget_bytes));
    d.advice = std::string(kCapacityAdvice);
  } else if (describe_page_capacity(e, limit, "budget", d)) {
    // capacity, in pages
  } else if (e.real_device && e.request_fits_now.value_or(false)) {
    d.cause = Cause::transient;
    d.evidence = fmt::format("the same {} request succeeded right after the failure",
                             format_bytes(e.request_bytes));
    d.advice =
        "the failure did not last: frees may still have been pending on a stream; "
        "synchronize before large allocations";
  } else {
    d.cause = Cause::fragmentation;
    d.evidence = e.largest_free_bytes
                     ? fmt::format("{} free in total, but the largest block is {} < request {}",
                                   format_bytes(d.free_bytes),
                                   largest_text(*e.largest_free_bytes, e.granularity_bytes),
                                   format_bytes(e.request_bytes))
                     : fmt::format("{} free in total >= request {} (largest block not probed)",
                                   format_bytes(d.free_bytes), format_bytes(e.request_bytes));
    d.advice = std::string(kFragmentationAdvice);
  }
  return d;
}

std::uint64_t find_largest_free(const ProbeFn& probe, std::uint64_t upper_bytes,
                                std::uint64_t resolution) {
  const std::uint64_t max_units = upper_bytes / resolution;
  if (max_units == 0) return 0;
  if (probe(max_units * resolution) == AllocStatus::ok) return max_units * resolution;
  std::uint64_t good = 0;         // 0 bytes always "fit"
  std::uint64_t bad = max_units;  // known to fail
  while (bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    if (probe(mid * resolution) == AllocStatus::ok) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  return good * resolution;
}

}  // namespace oomlab
