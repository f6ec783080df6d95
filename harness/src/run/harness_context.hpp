// The RunContext a scenario drives: allocations go through the Recording adaptor, new blocks are
// filled for the integrity check, the first OOM is analysed on the spot (probes, cause, advice,
// a check of every filled block), and whatever the scenario still holds is freed by
// release_all() on every exit path.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "kernels/kernels.hpp"
#include "oomlab/program_replay.hpp"
#include "oomlab/scenario.hpp"
#include "record/phase_table.hpp"
#include "record/recording.hpp"
#include "run/integrity.hpp"
#include "run/live_blocks.hpp"
#include "run/run_result.hpp"

namespace oomlab {

struct ContextSettings {
  Params params;
  std::uint64_t seed = 1;
  std::uint64_t budget_bytes = 0;
  Stream stream;
  bool probe = true;
  bool simulated = true;
  VerifyMode verify = VerifyMode::sample;
  std::uint64_t device_free_at_start = 0;  // after the ballast: the external-pressure baseline
  // The backend's own (BackendInfo of its memory source): its OOM's words and resolution.
  std::uint64_t granularity_bytes = kDevicePageBytes;
  std::string oom_source = "driver";
  // Simulated: the card the budget stands for (a named card's memory, a size's own), which an OOM
  // reports as the device's total; 0: the allocator's (the modelled card, for N% and all).
  std::uint64_t card_bytes = 0;
  const std::atomic<bool>* stop = nullptr;
  const std::atomic<bool>* timed_out = nullptr;  // set by the runner's watchdog at --timeout
  kernels::MismatchCounter* mismatch_counter = nullptr;  // real devices only
  std::function<Stream()>
      new_stream;  // more streams for RunContext::stream(); null: the sim's numbers
  std::function<void(std::string)> notice;  // the run's notices (run_plan's notify)
};

// It is also the ProgramReplay a replay asks for (find_extension).
class HarnessContext final : public RunContext, public ProgramReplay {
 public:
  HarnessContext(Recording& allocator, PhaseTable& phases, ContextSettings settings);
  ~HarnessContext() override;
  HarnessContext(const HarnessContext&) = delete;
  HarnessContext& operator=(const HarnessContext&) = delete;
  HarnessContext(HarnessContext&&) = delete;
  HarnessContext& operator=(HarnessContext&&) = delete;

  Block allocate(std::size_t bytes, std::string_view label) override {
    return allocate_block(settings_.stream, bytes, label, true);
  }
  Block try_allocate(std::size_t bytes, std::string_view label) override {
    return allocate_block(settings_.stream, bytes, label, false);
  }
  void release(Block& block) override { release_on(settings_.stream, block); }
  [[nodiscard]] Stream stream(std::uint32_t index) override;
  Block allocate_on(Stream stream, std::size_t bytes, std::string_view label) override {
    return allocate_block(stream, bytes, label, true);
  }
  void release_on(Stream stream, Block& block) override;
  void touch(const Block& block) override;
  void fill(const Block& block) override;
  std::uint64_t verify(const Block& block) override;
  void cast(const Block& source, const Block& target, Precision precision) override;
  void step(std::uint64_t n) override;
  void phase(std::string_view name) override;
  Rng& rng() override { return rng_; }
  [[nodiscard]] const Params& params() const override { return settings_.params; }
  void metric(std::string_view name, double value) override;
  void note(std::string_view text) override { notes_.emplace_back(text); }
  void notice(std::string_view text) override {
    if (settings_.notice) {
      settings_.notice(std::string(text));
    } else {
      note(text);
    }
  }
  void begin_trial(std::string_view label) override;
  void end_trial(bool fitted) override;
  [[nodiscard]] bool stop_requested() const override;
  [[nodiscard]] std::uint64_t budget_bytes() const override { return settings_.budget_bytes; }
  [[nodiscard]] std::uint64_t live_bytes() const override { return allocator_.live_bytes(); }
  [[nodiscard]] bool simulated() const override { return settings_.simulated; }
  [[nodiscard]] bool oom_recorded() const override { return oom_.has_value(); }
  void clear_oom() override {
    oom_.reset();
    oom_gives_way_ = false;
  }
  void expect_peak(std::uint64_t bytes) override { expected_peak_bytes_ = bytes; }
  [[nodiscard]] std::uint64_t peak_live_bytes() const override { return peak_since_reset_; }
  void reset_peak() override { peak_since_reset_ = allocator_.live_bytes(); }
  [[nodiscard]] LeakEstimate leak_estimate() const override;
  [[nodiscard]] void* find_extension(std::string_view id) override {
    return id == ProgramReplay::kExtension ? static_cast<ProgramReplay*>(this) : nullptr;
  }
  std::optional<std::uint64_t> largest_free_bytes() override;

  // ProgramReplay.
  std::vector<Block> allocate_placed(std::span<const PlacedSegment> segments,
                                     std::string_view label) override;
  void trim() override { allocator_.trim(); }
  [[nodiscard]] void* find_allocator_capability(std::string_view id) override {
    return allocator_.find_capability(id);
  }
  void describe_oom(ProgramRequest request) override;
  Block remake_failed_request(Stream stream, std::size_t bytes, std::string_view label) override;
  Block remake_survived_request(Stream stream, std::size_t bytes, std::string_view label) override;

  // The harness's side.
  // Verifies every filled block still live (the end-of-run check).
  void verify_live_blocks() { integrity_.verify_live(blocks_); }
  // Frees what the scenario still holds, as phase "cleanup".
  void release_all();
  [[nodiscard]] const std::optional<OomRecord>& oom() const { return oom_; }
  [[nodiscard]] const std::vector<std::pair<std::string, double>>& metrics() const {
    return metrics_;
  }
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }
  [[nodiscard]] const std::vector<TrialSpan>& trials() const { return trials_; }
  [[nodiscard]] const Integrity& integrity() const { return integrity_; }
  // Throws TimedOut or Interrupted when the run was asked to stop.
  void check_stop() const;

 private:
  Block allocate_block(Stream stream, std::size_t bytes, std::string_view label, bool is_the_oom);
  Block take(const AllocResult& result, Stream stream, std::size_t bytes, std::string_view label,
             bool is_the_oom);
  void record_oom(std::size_t bytes, std::string_view label, const AllocResult& result);
  std::uint64_t probe_largest(std::uint64_t upper_bytes);
  void set_filled(const Block& block, bool filled);

  Recording& allocator_;
  PhaseTable& phases_;
  ContextSettings settings_;
  Rng rng_;
  LiveBlocks blocks_;
  std::uint64_t expected_peak_bytes_ = 0;  // expect_peak(): the scenario's own model
  Integrity integrity_;
  std::vector<StepSample> step_samples_;
  std::vector<std::pair<std::string, double>> metrics_;
  std::vector<std::string> notes_;
  std::vector<TrialSpan> trials_;
  std::optional<OomRecord> oom_;
  bool oom_gives_way_ = false;  // oom_ is a replayed program's own failure, made again
  std::uint64_t peak_since_reset_ = 0;
  std::vector<Stream> streams_;  // by index; [0] is settings_.stream
};

}  // namespace oomlab
