#include "run/harness_context.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/kernels.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {
constexpr int kCudaErrorMemoryAllocation = 2;
}

HarnessContext::HarnessContext(Recording& allocator, PhaseTable& phases, ContextSettings settings)
    : allocator_(allocator),
      phases_(phases),
      settings_(std::move(settings)),
      rng_(settings_.seed),
      integrity_(settings_.simulated ? VerifyMode::off : settings_.verify,
                 settings_.mismatch_counter, settings_.stream, settings_.seed) {
}

HarnessContext::~HarnessContext() {
  // The runner calls release_all() while the event log is still open; this is the fallback for
  // paths that skipped it (an exception out of the run), freeing without recording.
  if (blocks_.empty()) return;
  try {
    blocks_.drain([&](const LiveBlocks::Entry& e) {
      allocator_.inner().deallocate(e.ptr, e.bytes, Stream{e.stream});
    });
  } catch (...) {  // NOLINT(bugprone-empty-catch): nothing better can be done in a destructor
  }
}

bool HarnessContext::stop_requested() const {
  return (settings_.stop != nullptr && settings_.stop->load(std::memory_order_relaxed)) ||
         (settings_.timed_out != nullptr && settings_.timed_out->load(std::memory_order_relaxed));
}

void HarnessContext::check_stop() const {
  if (!stop_requested()) [[likely]]
    return;
  if (settings_.timed_out != nullptr && settings_.timed_out->load(std::memory_order_relaxed))
    throw TimedOut();
  throw Interrupted();
}

Block HarnessContext::allocate_block(Stream stream, std::size_t bytes, std::string_view label,
                                     bool is_the_oom) {
  check_stop();
  return take(allocator_.allocate(bytes, stream), stream, bytes, label, is_the_oom);
}

// A block the allocator handed out (kept, filled), or the OOM it refused with (recorded).
Block HarnessContext::take(const AllocResult& result, Stream stream, std::size_t bytes,
                           std::string_view label, bool is_the_oom) {
  if (result.ok()) {
    const LiveBlocks::Handle handle = blocks_.add(result.ptr, bytes, stream.handle);
    // Kernels run on the run's stream alone: a block of another stream is left unfilled.
    if (stream == settings_.stream && integrity_.fill_new(result.ptr, bytes))
      blocks_.find(handle)->filled = true;
    peak_since_reset_ = std::max(peak_since_reset_, allocator_.live_bytes());
    return {result.ptr, bytes, AllocStatus::ok, handle.slot, handle.generation};
  }
  if (result.status == AllocStatus::error) {
    throw Error(ErrorKind::device,
                fmt::format("allocating {} ('{}') failed: {}", format_bytes(bytes), label,
                            cuda_error_name(result.error_code)));
  }
  if (is_the_oom && (!oom_ || oom_gives_way_)) {
    oom_gives_way_ = false;
    record_oom(bytes, label, result);
  }
  return {nullptr, bytes, result.status, Block::kNoSlot};
}

std::vector<Block> HarnessContext::allocate_placed(std::span<const PlacedSegment> segments,
                                                   std::string_view label) {
  check_stop();
  const std::vector<AllocResult> results = oomlab::allocate_placed(allocator_, segments);
  std::vector<Block> blocks;
  std::size_t i = 0;
  for (const PlacedSegment& segment : segments) {
    for (const PlacedBlock& placed : segment.blocks) {
      const AllocResult result =
          i < results.size() ? results[i++] : AllocResult{nullptr, AllocStatus::out_of_memory, 0};
      blocks.push_back(take(result, segment.stream, placed.bytes, label, true));
    }
  }
  return blocks;
}

void HarnessContext::describe_oom(ProgramRequest request) {
  if (!oom_) return;
  oom_->trace_entry = request.trace_entry;
  oom_->trace_line = request.trace_line;
  oom_->frames = std::move(request.frames);
  if (!oom_->frames.empty()) oom_->frames_from = "snapshot";
  oom_->user_frame = std::move(request.user_frame);
  oom_->largest_live = std::move(request.largest_live);
  oom_->holders = std::move(request.holders);
}

Block HarnessContext::remake_failed_request(Stream stream, std::size_t bytes,
                                            std::string_view label) {
  const bool first = !oom_;
  Block block = allocate_block(stream, bytes, label, first);
  if (first && oom_) oom_gives_way_ = true;
  return block;
}

Block HarnessContext::remake_survived_request(Stream stream, std::size_t bytes,
                                              std::string_view label) {
  return allocate_block(stream, bytes, label, false);
}

void HarnessContext::release_on(Stream stream, Block& block) {
  if (!block.ok()) return;
  const LiveBlocks::Entry entry = blocks_.remove({block.slot, block.generation}, block.ptr);
  allocator_.deallocate(entry.ptr, entry.bytes, stream);
  block = Block{};
}

Stream HarnessContext::stream(std::uint32_t index) {
  if (streams_.empty()) streams_.push_back(settings_.stream);
  while (streams_.size() <= index) {
    // The sim has no streams: distinct numbers keep them apart in events.csv.
    streams_.push_back(settings_.new_stream
                           ? settings_.new_stream()
                           : Stream{reinterpret_cast<void*>(streams_.size())});  // NOLINT
  }
  return streams_[index];
}

void HarnessContext::release_all() {
  if (blocks_.empty()) return;
  allocator_.set_phase(phases_.intern("cleanup"));
  allocator_.mark();
  blocks_.drain(
      [&](const LiveBlocks::Entry& e) { allocator_.deallocate(e.ptr, e.bytes, Stream{e.stream}); });
}

void HarnessContext::touch(const Block& block) {
  if (settings_.simulated || !block.ok()) return;
  const LiveBlocks::Entry* entry = blocks_.find({block.slot, block.generation});
  if (entry != nullptr && entry->filled)
    return;  // the fill wrote every page; a touch would spoil the pattern
  kernels::touch(block.ptr, block.bytes, settings_.stream);
}

void HarnessContext::set_filled(const Block& block, bool filled) {
  if (LiveBlocks::Entry* entry = blocks_.find({block.slot, block.generation}))
    entry->filled = filled;
}

void HarnessContext::fill(const Block& block) {
  if (settings_.simulated || !block.ok()) return;
  integrity_.fill(block.ptr, block.bytes);
  set_filled(block, true);
}

std::uint64_t HarnessContext::verify(const Block& block) {
  if (settings_.simulated || !block.ok()) return 0;
  return integrity_.verify(block.ptr, block.bytes);
}

void HarnessContext::cast(const Block& source, const Block& target, Precision precision) {
  if (settings_.simulated || !source.ok() || !target.ok()) return;
  const std::size_t count =
      std::min(source.bytes / sizeof(float), target.bytes / element_bytes(precision));
  kernels::cast(static_cast<const float*>(source.ptr), target.ptr, count, precision,
                settings_.stream);
  set_filled(target, false);  // it holds data now, not the pattern
}

LeakEstimate HarnessContext::leak_estimate() const {
  const LeakFit fit = fit_leak(step_samples_, settings_.budget_bytes);
  return {.samples = fit.samples,
          .bytes_per_step = fit.bytes_per_step,
          .intercept_bytes = fit.intercept_bytes,
          .r_squared = fit.r_squared,
          .detected = fit.detected};
}

void HarnessContext::step(std::uint64_t n) {
  check_stop();
  allocator_.set_step(n);
  allocator_.mark();
  step_samples_.push_back({n, allocator_.live_bytes()});
}

void HarnessContext::phase(std::string_view name) {
  check_stop();
  allocator_.set_phase(phases_.intern(name));
  allocator_.mark();
}

void HarnessContext::begin_trial(std::string_view label) {
  const std::uint64_t next = allocator_.events();
  trials_.push_back({.label = std::string(label), .first_event = next, .last_event = next});
}

void HarnessContext::end_trial(bool fitted) {
  if (trials_.empty()) return;
  TrialSpan& trial = trials_.back();
  trial.last_event = std::max(trial.first_event, allocator_.events() - 1);
  trial.fitted = fitted;
}

void HarnessContext::metric(std::string_view name, double value) {
  const auto it = std::find_if(metrics_.begin(), metrics_.end(),
                               [&](const auto& m) { return m.first == name; });
  if (it != metrics_.end()) {
    it->second = value;
  } else {
    metrics_.emplace_back(std::string(name), value);
  }
}

std::uint64_t HarnessContext::probe_largest(std::uint64_t upper_bytes) {
  return find_largest_free(
      [&](std::uint64_t bytes) {
        const AllocStatus status = allocator_.probe(bytes, settings_.stream);
        if (status == AllocStatus::error) {
          throw Error(ErrorKind::device, fmt::format("probing {} failed", format_bytes(bytes)));
        }
        return status;
      },
      upper_bytes, settings_.granularity_bytes);
}

std::optional<std::uint64_t> HarnessContext::largest_free_bytes() {
  if (!settings_.probe) return std::nullopt;
  const std::uint64_t live = allocator_.live_bytes();
  return probe_largest(settings_.budget_bytes > live ? settings_.budget_bytes - live : 0);
}

void HarnessContext::record_oom(std::size_t bytes, std::string_view label,
                                const AllocResult& result) {
  OomRecord rec;
  rec.event = allocator_.events() - 1;  // the oom event Recording has just written
  rec.step = allocator_.step();
  rec.phase = phases_.name(allocator_.phase());
  rec.t_ms = static_cast<double>(allocator_.now_ns()) / 1e6;
  rec.request_bytes = bytes;
  rec.request_label = std::string(label);
  rec.live_bytes = allocator_.live_bytes();
  rec.live_count = allocator_.live_count();
  // The run's kernels may still be writing the newest blocks, and a managed block takes device
  // pages only once written: read the state after they have run, not halfway through.
  if (!settings_.simulated) kernels::wait(settings_.stream);
  const MemoryState state = allocator_.state();  // before any probe disturbs it
  rec.reserved_bytes = state.reserved_bytes;
  rec.allocator_used_bytes = state.used_bytes;
  rec.device_free_bytes = state.device_free_bytes;
  rec.device_total_bytes = state.device_total_bytes;
  if (const auto* cache = allocator_.capability<CachingAllocator>())
    rec.cache = cache->cache_state();
  // A fraction cap (PyTorch's allowed memory) caps a whole card: the budget is not the card then.
  if (settings_.card_bytes != 0 && (!rec.cache || rec.cache->allowed_bytes == 0))
    rec.device_total_bytes = settings_.card_bytes;
  std::optional<bool> fits_now;
  if (settings_.probe) {
    fits_now = allocator_.probe(bytes, settings_.stream) == AllocStatus::ok;
    rec.largest_free_bytes = largest_free_bytes();
  }
  integrity_.verify_live(blocks_);  // did anything overwrite live data on the way to the OOM?
  rec.leak = fit_leak(step_samples_, settings_.budget_bytes);
  const bool capped = result.status == AllocStatus::budget_cap;
  std::uint64_t live_footprint = 0;
  blocks_.for_each_live(
      [&](const LiveBlocks::Entry& block) { live_footprint += allocator_.footprint(block.bytes); });
  rec.diagnosis = diagnose({.request_bytes = bytes,
                            .budget_bytes = settings_.budget_bytes,
                            .live_bytes = rec.live_bytes,
                            .live_footprint_bytes = live_footprint,
                            .request_footprint_bytes = allocator_.footprint(bytes),
                            .expected_peak_bytes = expected_peak_bytes_,
                            .largest_free_bytes = rec.largest_free_bytes,
                            .granularity_bytes = settings_.granularity_bytes,
                            .request_fits_now = fits_now,
                            .cap_bytes = capped ? state.cap_bytes : 0,
                            .cap_charged_bytes = capped ? state.cap_charged_bytes : 0,
                            .real_device = !settings_.simulated,
                            .device_free_at_start = settings_.device_free_at_start,
                            .device_free_now = state.device_free_bytes,
                            .own_bytes_bound = state.own_bytes_bound,
                            .leak = rec.leak,
                            .cache = rec.cache});
  const bool fraction = rec.cache && rec.cache->allowed_bytes > 0;
  rec.source = capped ? "budget-cap" : fraction ? "fraction" : settings_.oom_source;
  rec.granularity_bytes = settings_.granularity_bytes;
  // The CUDA error's name, where a CUDA call was made: not for the cap, not on the sim.
  if (!capped && !fraction && !settings_.simulated) {
    rec.error =
        cuda_error_name(result.error_code != 0 ? result.error_code : kCudaErrorMemoryAllocation);
  }
  oom_ = std::move(rec);
}

}  // namespace oomlab
