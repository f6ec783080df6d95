// A program's device memory over its life under `exec`: a thread reads the devices every
// `interval` (100 Hz or more) and writes a `sample` row of events.csv each time; the program's
// OOM line, when its output shows one, becomes an `oom` row at that moment. In both rows
// live_bytes is what the program's processes use (NVML, their CUDA contexts included) and
// reserved_bytes what the devices' free memory says it took out of the budget; a sample's
// `bytes` is the devices' free memory. On several devices each one also has rows of its own,
// and the timeline keeps each one's peak, when it filled its budget and whether it moved.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/exec_devices.hpp"
#include "record/event_clock.hpp"
#include "record/event_log.hpp"
#include "record/phase_table.hpp"
#include "run/stoppable_thread.hpp"

namespace oomlab {

struct MemoryReading {
  std::uint64_t t_ns = 0;
  std::uint64_t program_bytes = 0;  // NVML's per-process figure, or used_bytes without one
  std::uint64_t used_bytes = 0;     // out of the budget, from the devices' free memory
  std::uint64_t free_bytes = 0;
};

// What the program's own OOM message states of the moment it failed (PyTorch: "this process has
// 2.98 GiB memory in use", "of which 16.56 MiB is free").
struct StatedFigures {
  std::optional<std::uint64_t> process_bytes;
  std::optional<std::uint64_t> device_free_bytes;
};

// `sampled` (up to an interval old) with the figures the message states put in: those are the
// OOM's own. A message speaks of one device, so a run on several keeps the summed samples.
// `free_at_start`: each device's free memory before the program started.
[[nodiscard]] MemoryReading with_stated(MemoryReading sampled, const StatedFigures& stated,
                                        const std::vector<std::uint64_t>& free_at_start);

// One device's share of the timeline (a run on several devices keeps one each).
struct DeviceTimeline {
  std::uint64_t budget_bytes = 0;
  MemoryReading last;
  MemoryReading peak;  // the reading with the most program_bytes
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t first_bytes = 0;
  std::optional<std::uint64_t> full_ns;  // its use first came within kNearBudgetBytes of its budget
  std::optional<std::uint64_t> at_oom_bytes;  // its program_bytes when the first OOM was noted
  // Its reading then (on the device the OOM line names, with the figures the line states).
  std::optional<MemoryReading> at_oom;
  bool rose_after_oom = false;  // its program's memory grew by a page or more after that
};

// Where the timeline's rows go and what each device was given.
struct TimelineSetup {
  // Each device's free memory (as read()) with the ballast held, before the program started.
  std::vector<std::uint64_t> free_at_start;
  std::vector<std::uint64_t> budgets;  // each device's
  std::chrono::microseconds interval{5'000};
  std::filesystem::path events_csv;  // the devices summed; empty: nowhere
  // With several devices, each one's own rows (empty paths: none).
  std::vector<std::filesystem::path> device_csvs;
};

// A program is taken to have filled its budget when its use came within this of it.
inline constexpr std::uint64_t kNearBudgetBytes = 64ULL << 20;

class MemoryTimeline {
 public:
  // Throws Error(io) when a file cannot be made.
  MemoryTimeline(ExecDevices& devices, TimelineSetup setup);
  ~MemoryTimeline();
  MemoryTimeline(const MemoryTimeline&) = delete;
  MemoryTimeline& operator=(const MemoryTimeline&) = delete;
  MemoryTimeline(MemoryTimeline&&) = delete;
  MemoryTimeline& operator=(MemoryTimeline&&) = delete;

  void start();
  void set_program(pid_t pid);
  // The program said it ran out of memory, now: an oom row with the last reading and what the
  // message states (with_stated), also in `device`'s own rows when it is known. Its seq, and
  // the reading (stamped now). `again`: a later line is the OOM, not the one noted before (a
  // refusal the program survived): the devices' moment of the OOM moves to now.
  std::pair<std::uint64_t, MemoryReading> note_oom(std::uint64_t request_bytes,
                                                   const StatedFigures& stated = {},
                                                   std::optional<std::size_t> device = {},
                                                   bool again = false);
  // Stops the thread, takes a last reading and closes the logs (rethrows what a sink threw).
  void finish();

  [[nodiscard]] MemoryReading last() const;
  [[nodiscard]] MemoryReading peak() const;  // the reading with the most program_bytes
  [[nodiscard]] std::uint64_t peak_used_bytes() const;
  [[nodiscard]] std::uint64_t first_bytes() const;  // the first program_bytes above 0
  [[nodiscard]] std::uint64_t samples() const;
  [[nodiscard]] bool per_process() const;  // NVML told the program's processes apart
  [[nodiscard]] std::vector<DeviceTimeline> per_device() const;
  // When any device's memory last moved by a page or more (ns on the timeline's clock).
  [[nodiscard]] std::uint64_t last_change_ns() const;
  [[nodiscard]] std::uint64_t now_ns() const { return clock_.now_ns(); }
  [[nodiscard]] const std::vector<std::uint64_t>& free_at_start() const {
    return setup_.free_at_start;
  }
  [[nodiscard]] const PhaseTable& phases() const { return phases_; }

 private:
  void sample();  // with mutex_ held
  void track(std::size_t i, const MemoryReading& r);
  static void append(EventLog& log, std::uint32_t phase, Op op, std::uint64_t bytes,
                     const MemoryReading& r);

  ExecDevices& devices_;
  TimelineSetup setup_;
  PhaseTable phases_;
  std::uint32_t phase_ = 0;
  EventClock clock_;
  std::unique_ptr<EventLog> log_;
  std::vector<std::unique_ptr<EventLog>> device_logs_;
  mutable std::mutex mutex_;
  std::atomic<pid_t> program_{0};
  MemoryReading last_;
  MemoryReading peak_;
  std::uint64_t peak_used_ = 0;
  std::uint64_t first_bytes_ = 0;
  std::uint64_t samples_ = 0;
  std::vector<DeviceTimeline> per_device_;
  std::uint64_t last_change_ns_ = 0;
  bool oom_noted_ = false;
  bool per_process_ = true;
  bool finished_ = false;
  StoppableThread thread_;
};

}  // namespace oomlab
