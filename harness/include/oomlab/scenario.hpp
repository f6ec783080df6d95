// What a scenario plugin sees: the Scenario it implements and the RunContext it drives.
// A scenario allocates through the context in the pattern of the program it models; the harness
// records every event, catches the OOM at the moment it happens, and frees whatever the scenario
// still holds when it returns (or throws, or is interrupted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/error.hpp"
#include "oomlab/params.hpp"
#include "oomlab/recorded_settings.hpp"
#include "oomlab/rng.hpp"

namespace oomlab {

namespace trace {
struct Trace;
}  // namespace trace

// Element types of the cast kernel: what mixed-precision training keeps its working copies in.
enum class Precision : std::uint8_t { fp32, fp16, bf16, fp8_e4m3 };
[[nodiscard]] constexpr std::size_t element_bytes(Precision p) {
  return p == Precision::fp32 ? 4 : (p == Precision::fp8_e4m3 ? 1 : 2);
}

// A least-squares line through live bytes at the step boundaries so far.
struct LeakEstimate {
  std::size_t samples = 0;
  double bytes_per_step = 0.0;
  double intercept_bytes = 0.0;  // live bytes the line gives at step 0
  double r_squared = 0.0;
  bool detected = false;  // steady growth that matters at this budget
};

// One allocation a scenario holds. Plain data: copying it does not duplicate the memory, and
// releasing it twice is caught (std::logic_error).
struct Block {
  static constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();

  void* ptr = nullptr;
  std::size_t bytes = 0;
  AllocStatus status = AllocStatus::out_of_memory;
  std::uint32_t slot = kNoSlot;  // the harness's bookkeeping: which block this is
  std::uint32_t generation = 0;

  [[nodiscard]] bool ok() const { return status == AllocStatus::ok; }
  explicit operator bool() const { return ok(); }
};

class RunContext {
 public:
  RunContext() = default;
  virtual ~RunContext() = default;
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;
  RunContext(RunContext&&) = delete;
  RunContext& operator=(RunContext&&) = delete;

  // Allocates through the run's allocator. A failure is an OOM of the run: recorded, and the
  // first one is analysed on the spot (largest free block, cause, advice) before this returns
  // a block that is not ok(). Throws Interrupted when the run was asked to stop.
  virtual Block allocate(std::size_t bytes, std::string_view label) = 0;
  // The same, for a failure the scenario expects, such as filling memory until the allocator
  // refuses: recorded as an oom event and counted, but not analysed as the run's OOM.
  virtual Block try_allocate(std::size_t bytes, std::string_view label) = 0;
  virtual void release(Block& block) = 0;

  // Streams: 0 is the run's own, others are made on first use (real CUDA streams on a device, so
  // that `async` orders each allocation on its stream; cudaMalloc and the sim ignore them).
  // Only blocks on stream 0 are filled for the integrity check and touched by kernels.
  [[nodiscard]] virtual Stream stream(std::uint32_t index) = 0;
  virtual Block allocate_on(Stream stream, std::size_t bytes, std::string_view label) = 0;
  virtual void release_on(Stream stream, Block& block) = 0;

  // Kernels on the run's stream (no-ops on the sim, which has no memory to write):
  // one write per page, so that managed memory really lands on the device;
  virtual void touch(const Block& block) = 0;
  // a pattern derived from the seed and the address;
  virtual void fill(const Block& block) = 0;
  // and the count of 8-byte words that no longer hold it.
  virtual std::uint64_t verify(const Block& block) = 0;
  // Converts the fp32 values of `source` to `precision` in `target`, as many as fit in both
  // (CUDA's own conversions: __half, __nv_bfloat16, __nv_fp8_e4m3, saturating). `target` then
  // holds data rather than the fill pattern, so data-integrity checks leave it out.
  virtual void cast(const Block& source, const Block& target, Precision precision) = 0;

  // Markers in the event log: step boundaries (leak detection reads live bytes there) and
  // named phases ("fill", "free", "grow").
  virtual void step(std::uint64_t n) = 0;
  virtual void phase(std::string_view name) = 0;

  virtual Rng& rng() = 0;
  [[nodiscard]] virtual const Params& params() const = 0;
  virtual void metric(std::string_view name, double value) = 0;
  // A finding in words, for the summary ("notes") and the screen: what a number means.
  virtual void note(std::string_view text) = 0;
  // What qualifies the run's whole answer (a trace that stops at the program's OOM): said at
  // once, and by every command that runs the scenario, a search's included.
  virtual void notice(std::string_view text) { note(text); }

  [[nodiscard]] virtual bool stop_requested() const = 0;
  [[nodiscard]] virtual std::uint64_t budget_bytes() const = 0;
  [[nodiscard]] virtual std::uint64_t live_bytes() const = 0;
  [[nodiscard]] virtual bool simulated() const = 0;
  // Whether the run's OOM has happened (the first failed allocate()).
  [[nodiscard]] virtual bool oom_recorded() const = 0;
  // Forgets the run's OOM so that the next failed allocate() is recorded and analysed instead:
  // for searches whose telling OOM is the last one (the batch just past the largest that fits).
  virtual void clear_oom() = 0;
  // What the part of the run starting now needs at its peak by the scenario's own model, in the
  // device's 2 MiB pages (0: not known). An OOM while that is more than the budget is capacity:
  // no allocator could have held it, whatever was free at the failing request.
  virtual void expect_peak(std::uint64_t bytes) { static_cast<void>(bytes); }

  // The highest live bytes since the run began or since reset_peak().
  [[nodiscard]] virtual std::uint64_t peak_live_bytes() const = 0;
  virtual void reset_peak() = 0;
  // The line through live bytes at the step boundaries marked so far.
  [[nodiscard]] virtual LeakEstimate leak_estimate() const = 0;

  // The largest block the allocator could hand out now: bisection with probes that are freed
  // at once, to kDevicePageBytes resolution (0 means under one page). Recorded as probe events.
  // Nothing (and no probe) when the user asked for --no-probe.
  virtual std::optional<std::uint64_t> largest_free_bytes() = 0;

  // One trial of a search (growing-batch's "fp32 batch 24"): the events from begin_trial to
  // end_trial, named, and whether the trial fitted. Reports mark each on the timeline, and say
  // which trial the recorded OOM came from. A context that keeps no record ignores them.
  virtual void begin_trial(std::string_view label) { static_cast<void>(label); }
  virtual void end_trial(bool fitted) { static_cast<void>(fitted); }

  // What only some scenarios need of the run (a replay's ProgramReplay): an interface T with
  // `static constexpr std::string_view kExtension`, null when this context has none.
  template <typename T>
  [[nodiscard]] T* extension() {
    return static_cast<T*>(find_extension(T::kExtension));
  }
  // The same for a scenario that cannot run without it: Error(internal) naming both.
  template <typename T>
  [[nodiscard]] T& required_extension(std::string_view scenario) {
    T* found = extension<T>();
    if (found == nullptr) {
      throw Error(ErrorKind::internal, std::string(scenario) + " needs the run context's '" +
                                           std::string(T::kExtension) +
                                           "' extension, which this context does not have");
    }
    return *found;
  }
  // The untyped lookup extension<T>() makes.
  [[nodiscard]] virtual void* find_extension(std::string_view id) {
    static_cast<void>(id);
    return nullptr;
  }
};

class Scenario {
 public:
  Scenario() = default;
  virtual ~Scenario() = default;
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;
  Scenario(Scenario&&) = delete;
  Scenario& operator=(Scenario&&) = delete;

  [[nodiscard]] virtual std::string_view name() const = 0;
  // One line for `oomlab list`.
  [[nodiscard]] virtual std::string_view summary() const = 0;
  // A paragraph: the real-world case it models and how to read its results.
  [[nodiscard]] virtual std::string_view details() const { return {}; }
  [[nodiscard]] virtual ParamSpec params() const = 0;
  // Rejects a combination of parameters that cannot run (each value alone was checked against
  // its ParamDef already) with Error(usage), before anything is allocated.
  virtual void validate(const Params& /*params*/) const {}
  // Reads what the run needs from outside (a trace file) before any device memory is taken;
  // throws Error(input) "file:line: what" for a bad file. A long read calls `check_stop` every
  // so often: it throws Interrupted (TimedOut) once the run is asked to stop (Ctrl-C, --timeout).
  virtual void prepare(const Params& /*params*/, const std::function<void()>& /*check_stop*/) {}
  // Returns at the OOM, at its own end, or when ctx.stop_requested().
  virtual void run(RunContext& ctx) = 0;
  // After prepare(): the settings of the allocator the scenario's input was recorded with (a
  // replayed snapshot's), as the options of the backend that models it, for that model to start
  // from. None by default.
  [[nodiscard]] virtual std::optional<RecordedSettings> recorded_allocator_settings() const {
    return std::nullopt;
  }

  // A scenario that replays a trace (oomlab/trace.hpp) says so: the registry's trace player.
  // A run asked to replay a trace already read (a typed request: RunConfig::trace) is made of it
  // and hands it the trace through adopt() in place of prepare(); no file is read again.
  [[nodiscard]] virtual bool replays_traces() const { return false; }
  // In place of prepare(), for a trace already read, with the scenario's parameters (its trace's
  // own are not read). Only a scenario that replays_traces() is asked; the default refuses.
  virtual void adopt(const Params& /*params*/,
                     const std::shared_ptr<const trace::Trace>& /*trace*/) {
    throw Error(ErrorKind::internal, std::string(name()) + " replays no trace");
  }
  // After prepare() or adopt(): the trace it replays, read-only, for the next run of the same
  // request to adopt (a search's trials read their trace once); null for a scenario without one.
  [[nodiscard]] virtual std::shared_ptr<const trace::Trace> input_trace() const { return nullptr; }
};

}  // namespace oomlab
