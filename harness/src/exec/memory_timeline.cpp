#include "exec/memory_timeline.hpp"

#include "record/csv_sink.hpp"

namespace oomlab {

MemoryTimeline::MemoryTimeline(ExecDevices& devices, std::vector<std::uint64_t> free_at_start,
                               std::chrono::microseconds interval,
                               const std::filesystem::path& events_csv)
    : devices_(devices),
      free_at_start_(std::move(free_at_start)),
      interval_(interval),
      phase_(phases_.intern("program")),
      clock_(EventClock::Steady::now()) {
  std::unique_ptr<EventSink> sink;
  if (events_csv.empty()) {
    sink = std::make_unique<NullSink>();
  } else {
    sink = std::make_unique<CsvFileSink>(events_csv, phases_);
  }
  log_ = std::make_unique<EventLog>(std::move(sink));
}

MemoryTimeline::~MemoryTimeline() {
  thread_.stop();
  try {
    if (!finished_) log_->close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): finish() reports it; a destructor cannot
  }
}

void MemoryTimeline::start() {
  thread_.start([this](StoppableThread::Lock& lock) {
    auto next = StoppableThread::Clock::now();
    while (!thread_.stopping()) {
      {
        const std::lock_guard guard(mutex_);
        sample();
      }
      next = std::max(next + interval_, StoppableThread::Clock::now());
      thread_.wait_until(lock, next, [] { return false; });
    }
  });
}

void MemoryTimeline::set_program(pid_t pid) {
  program_.store(pid);
}

void MemoryTimeline::sample() {
  MemoryReading r{.t_ns = clock_.now_ns()};
  std::uint64_t nvml_program = 0;
  bool all_per_process = true;
  for (std::size_t i = 0; i < free_at_start_.size(); ++i) {
    const DeviceReading d = devices_.read(i, program_.load());
    r.free_bytes += d.free_bytes;
    r.used_bytes += free_at_start_[i] > d.free_bytes ? free_at_start_[i] - d.free_bytes : 0;
    if (d.program_bytes) {
      nvml_program += *d.program_bytes;
    } else {
      all_per_process = false;
    }
  }
  per_process_ = per_process_ && all_per_process;
  r.program_bytes = per_process_ ? nvml_program : r.used_bytes;
  append(Op::sample, r.free_bytes, r);
  last_ = r;
  ++samples_;
  if (r.program_bytes > peak_.program_bytes) peak_ = r;
  peak_used_ = std::max(peak_used_, r.used_bytes);
  if (first_bytes_ == 0) first_bytes_ = r.program_bytes;
}

void MemoryTimeline::append(Op op, std::uint64_t bytes, const MemoryReading& r) {
  log_->append(Event{.t_ns = r.t_ns,
                     .bytes = bytes,
                     .ptr = 0,
                     .stream = 0,
                     .live_bytes = r.program_bytes,
                     .reserved_bytes = r.used_bytes,
                     .step = 0,
                     .phase = phase_,
                     .thread = 0,
                     .op = op,
                     .status = op == Op::oom ? AllocStatus::out_of_memory : AllocStatus::ok});
}

MemoryReading with_stated(MemoryReading sampled, const StatedFigures& stated,
                          const std::vector<std::uint64_t>& free_at_start) {
  if (free_at_start.size() != 1) return sampled;
  if (stated.process_bytes) sampled.program_bytes = *stated.process_bytes;
  if (stated.device_free_bytes) {
    sampled.free_bytes = *stated.device_free_bytes;
    sampled.used_bytes =
        free_at_start.front() > sampled.free_bytes ? free_at_start.front() - sampled.free_bytes : 0;
  }
  return sampled;
}

std::pair<std::uint64_t, MemoryReading> MemoryTimeline::note_oom(std::uint64_t request_bytes,
                                                                 const StatedFigures& stated) {
  const std::lock_guard guard(mutex_);
  MemoryReading r = with_stated(last_, stated, free_at_start_);
  r.t_ns = clock_.now_ns();
  const std::uint64_t seq = log_->size();
  append(Op::oom, request_bytes, r);
  return {seq, r};
}

void MemoryTimeline::finish() {
  thread_.stop();
  const std::lock_guard guard(mutex_);
  if (finished_) return;
  finished_ = true;
  sample();
  log_->close();
}

MemoryReading MemoryTimeline::last() const {
  const std::lock_guard guard(mutex_);
  return last_;
}

MemoryReading MemoryTimeline::peak() const {
  const std::lock_guard guard(mutex_);
  return peak_;
}

std::uint64_t MemoryTimeline::peak_used_bytes() const {
  const std::lock_guard guard(mutex_);
  return peak_used_;
}

std::uint64_t MemoryTimeline::first_bytes() const {
  const std::lock_guard guard(mutex_);
  return first_bytes_;
}

std::uint64_t MemoryTimeline::samples() const {
  const std::lock_guard guard(mutex_);
  return samples_;
}

bool MemoryTimeline::per_process() const {
  const std::lock_guard guard(mutex_);
  return per_process_;
}

}  // namespace oomlab
