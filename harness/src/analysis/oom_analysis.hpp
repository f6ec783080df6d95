// Why an OOM happened, from the evidence taken at the moment it did. Pure functions: the
// run context gathers the evidence, these decide, and tests pin every branch without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "oomlab/caching_allocator.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

enum class Cause : std::uint8_t { capacity, fragmentation, leak, external_pressure, transient };

[[nodiscard]] std::string_view to_string(Cause cause);

struct StepSample {
  std::uint64_t step;
  std::uint64_t live_bytes;
};

// A least-squares line through live bytes at step boundaries.
struct LeakFit {
  std::size_t samples = 0;
  double bytes_per_step = 0.0;
  double intercept_bytes = 0.0;  // the line's live bytes at step 0
  double r_squared = 0.0;
  bool detected = false;                     // steady growth that matters at this budget
  std::optional<double> predicted_oom_step;  // where the line reaches the budget
  bool operator==(const LeakFit&) const = default;
};

// A leak is steady growth: at least kMinSamples, a fit with r² >= 0.9, and growth over the
// samples of at least 5% of the budget.
inline constexpr std::size_t kLeakMinSamples = 4;
[[nodiscard]] LeakFit fit_leak(std::span<const StepSample> samples, std::uint64_t budget_bytes);

struct OomEvidence {
  std::uint64_t request_bytes = 0;
  std::uint64_t budget_bytes = 0;
  std::uint64_t live_bytes = 0;
  // What the live blocks and the request take at the least from the allocator (whole pages where
  // it hands out pages, e.g. cudaMalloc's 2 MiB): none where not known.
  std::optional<std::uint64_t> live_footprint_bytes;
  std::optional<std::uint64_t> request_footprint_bytes;
  std::uint64_t expected_peak_bytes = 0;  // the scenario's own model of this part's peak (0: none)
  std::optional<std::uint64_t> largest_free_bytes;     // none when not probed
  std::uint64_t granularity_bytes = kDevicePageBytes;  // the probe's resolution (the backend's)
  std::optional<bool> request_fits_now;                // the same request, probed right after
  std::uint64_t cap_bytes = 0;                         // oomlab's cap when it refused (else 0)
  std::uint64_t cap_charged_bytes = 0;                 // what the cap counted as held then
  bool real_device = false;
  std::uint64_t device_free_at_start = 0;  // after the ballast
  std::uint64_t device_free_now = 0;
  std::uint64_t own_bytes_bound = 0;  // what this run's allocator can account for
  LeakFit leak;
  std::optional<CacheState> cache;  // a caching allocator's own account (a framework's model)
};

struct Diagnosis {
  Cause cause = Cause::capacity;
  std::uint64_t free_bytes = 0;                  // budget − live: free in total
  std::optional<double> fragmentation;           // 1 − largest / free, when probed
  std::uint64_t external_bytes = 0;              // taken by others during the run
  std::optional<std::uint64_t> footprint_bytes;  // live + request in the allocator's pages
  std::string evidence;                          // the figures that decided it, one line
  std::string advice;                            // the usual remedy, one line
  bool operator==(const Diagnosis&) const = default;
};

// First match wins: external-pressure, leak, capacity, transient (the same request fits right
// after, on a real device: the sim and a model of a caching allocator are deterministic),
// fragmentation. Behind a model of a framework's caching allocator, capacity and fragmentation are
// decided in its own arithmetic and told in the framework's words (CacheWords). A refusal by
// oomlab's cap is capacity or fragmentation against the cap. Capacity is decided against what the
// allocator can give: when the live blocks' pages and the request's pages together exceed the
// limit, or the scenario's own model says this part of the run needs more than the budget at its
// peak, no placement would have served it, so the cause is capacity and no remedy for fragmentation
// is offered.
[[nodiscard]] Diagnosis diagnose(const OomEvidence& evidence);

// The largest multiple of `resolution` in [0, upper_bytes] for which `probe` succeeds, by
// bisection (allocation success is monotone in size). 0 means under one `resolution`.
using ProbeFn = std::function<AllocStatus(std::uint64_t bytes)>;
[[nodiscard]] std::uint64_t find_largest_free(const ProbeFn& probe, std::uint64_t upper_bytes,
                                              std::uint64_t resolution);

}  // namespace oomlab
