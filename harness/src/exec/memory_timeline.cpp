#include "exec/memory_timeline.hpp"

#include "oomlab/units.hpp"
#include "record/csv_sink.hpp"

namespace oomlab {

namespace {

std::unique_ptr<EventLog> log_to(const std::filesystem::path& csv, const PhaseTable& phases) {
  if (csv.empty()) return std::make_unique<EventLog>(std::make_unique<NullSink>());
  return std::make_unique<EventLog>(std::make_unique<CsvFileSink>(csv, phases));
}

bool moved(std::uint64_t before, std::uint64_t now) {
  return (now > before ? now - before : before - now) >= kDevicePageBytes;
}

}  // namespace

MemoryTimeline::MemoryTimeline(ExecDevices& devices, TimelineSetup setup)
    : devices_(devices),
      setup_(std::move(setup)),
      phase_(phases_.intern("program")),
      clock_(EventClock::Steady::now()) {
  log_ = log_to(setup_.events_csv, phases_);
  for (const std::filesystem::path& csv : setup_.device_csvs)
    device_logs_.push_back(log_to(csv, phases_));
  per_device_.resize(setup_.free_at_start.size());
  for (std::size_t i = 0; i < per_device_.size() && i < setup_.budgets.size(); ++i)
    per_device_[i].budget_bytes = setup_.budgets[i];
}

MemoryTimeline::~MemoryTimeline() {
  thread_.stop();
  try {
    if (!finished_) {
      log_->close();
      for (auto& log : device_logs_)
        log->close();
    }
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
      next = std::max(next + setup_.interval, StoppableThread::Clock::now());
      thread_.wait_until(lock, next, [] { return false; });
    }
  });
}

void MemoryTimeline::set_program(pid_t pid) {
  program_.store(pid);
}

// One device's reading into its own account: peak, the moment it filled its budget, moves.
void MemoryTimeline::track(std::size_t i, const MemoryReading& r) {
  DeviceTimeline& d = per_device_[i];
  if (d.first_bytes == 0 && r.program_bytes > 0) d.first_bytes = r.program_bytes;
  const bool seen_before = d.last.t_ns != 0;
  if (seen_before &&
      (moved(d.last.program_bytes, r.program_bytes) || moved(d.last.used_bytes, r.used_bytes)))
    last_change_ns_ = r.t_ns;
  if (d.at_oom_bytes && r.program_bytes >= *d.at_oom_bytes + kDevicePageBytes)
    d.rose_after_oom = true;
  d.last = r;
  if (r.program_bytes > d.peak.program_bytes) d.peak = r;
  d.peak_used_bytes = std::max(d.peak_used_bytes, r.used_bytes);
  if (!d.full_ns && d.budget_bytes > 0 && r.used_bytes + kNearBudgetBytes >= d.budget_bytes)
    d.full_ns = r.t_ns;
  if (i < device_logs_.size()) append(*device_logs_[i], phase_, Op::sample, r.free_bytes, r);
}

void MemoryTimeline::sample() {
  MemoryReading r{.t_ns = clock_.now_ns()};
  std::vector<MemoryReading> each(setup_.free_at_start.size(), MemoryReading{.t_ns = r.t_ns});
  std::vector<bool> own(each.size(), false);
  bool all_per_process = true;
  for (std::size_t i = 0; i < each.size(); ++i) {
    const DeviceReading d = devices_.read(i, program_.load());
    const std::uint64_t start = setup_.free_at_start[i];
    each[i].free_bytes = d.free_bytes;
    each[i].used_bytes = start > d.free_bytes ? start - d.free_bytes : 0;
    own[i] = d.program_bytes.has_value();
    each[i].program_bytes = d.program_bytes.value_or(0);
    all_per_process = all_per_process && own[i];
  }
  per_process_ = per_process_ && all_per_process;
  for (std::size_t i = 0; i < each.size(); ++i) {
    if (!per_process_) each[i].program_bytes = each[i].used_bytes;
    r.free_bytes += each[i].free_bytes;
    r.used_bytes += each[i].used_bytes;
    r.program_bytes += each[i].program_bytes;
    track(i, each[i]);
  }
  append(*log_, phase_, Op::sample, r.free_bytes, r);
  last_ = r;
  ++samples_;
  if (r.program_bytes > peak_.program_bytes) peak_ = r;
  peak_used_ = std::max(peak_used_, r.used_bytes);
  if (first_bytes_ == 0) first_bytes_ = r.program_bytes;
}

void MemoryTimeline::append(EventLog& log, std::uint32_t phase, Op op, std::uint64_t bytes,
                            const MemoryReading& r) {
  log.append(Event{.t_ns = r.t_ns,
                   .bytes = bytes,
                   .ptr = 0,
                   .stream = 0,
                   .live_bytes = r.program_bytes,
                   .reserved_bytes = r.used_bytes,
                   .step = 0,
                   .phase = phase,
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
                                                                 const StatedFigures& stated,
                                                                 std::optional<std::size_t> device,
                                                                 bool again) {
  const std::lock_guard guard(mutex_);
  MemoryReading r = with_stated(last_, stated, setup_.free_at_start);
  r.t_ns = clock_.now_ns();
  const std::uint64_t seq = log_->size();
  append(*log_, phase_, Op::oom, request_bytes, r);
  std::optional<MemoryReading> own;
  if (device && *device < per_device_.size()) {
    const std::vector<std::uint64_t> one{setup_.free_at_start[*device]};
    own = with_stated(per_device_[*device].last, stated, one);
    own->t_ns = r.t_ns;
    if (*device < device_logs_.size())
      append(*device_logs_[*device], phase_, Op::oom, request_bytes, *own);
  }
  if (!oom_noted_ || again) {
    oom_noted_ = true;
    for (std::size_t i = 0; i < per_device_.size(); ++i) {
      DeviceTimeline& d = per_device_[i];
      d.rose_after_oom = false;
      d.at_oom_bytes = d.last.program_bytes;
      d.at_oom = own && device == i ? *own : d.last;
      d.at_oom->t_ns = r.t_ns;
    }
  }
  return {seq, r};
}

void MemoryTimeline::finish() {
  thread_.stop();
  const std::lock_guard guard(mutex_);
  if (finished_) return;
  finished_ = true;
  sample();
  log_->close();
  for (auto& log : device_logs_)
    log->close();
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

std::vector<DeviceTimeline> MemoryTimeline::per_device() const {
  const std::lock_guard guard(mutex_);
  return per_device_;
}

std::uint64_t MemoryTimeline::last_change_ns() const {
  const std::lock_guard guard(mutex_);
  return last_change_ns_;
}

}  // namespace oomlab
