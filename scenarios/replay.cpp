// replay: the strongest reproduction of an OOM is what the failing program really did. The
// trace (any format the registry holds: oomlab's events.csv, RMM's log, a framework's) is
// replayed against any
// backend, each allocation and free in order, on its own stream; the program's own failed
// requests are made again where they happened. The run says which trace entry broke it, whether
// the program's own failures failed again (replay_verdict.hpp), the peak the program demanded,
// and what it never freed.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/program_replay.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/trace_format.hpp"
#include "oomlab/units.hpp"
#include "replay_oom.hpp"
#include "replay_strict.hpp"
#include "replay_verdict.hpp"
#include "segment_match.hpp"

namespace oomlab {

class Replay final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "replay"; }
  [[nodiscard]] std::string_view summary() const override {
    return "replay a real allocation trace (oomlab's, RMM's, a framework's snapshot or allocator "
           "log) and say where it breaks";
  }
  [[nodiscard]] std::string_view details() const override {
    return "Reads --trace FILE (--format: auto, detected by content, or a trace format `oomlab "
           "list` names): oomlab's own events.csv, RMM's logging_resource_adaptor CSV, or what a "
           "framework registers (a memory snapshot, read without Python). Trace pointers map to "
           "new allocations; streams become real streams on async; the trace's own failed "
           "requests are made again where they happened (a failure there does not end the "
           "replay). For a format with levels, level=tensor replays what the program asked for, "
           "level=segment what its caching allocator "
           "got from the driver. The first request the program got that fails ends the replay: "
           "it is the run's OOM; when only the program's own failed requests fail again, the "
           "first of those is (the OOM reproduced). Places are trace entries (0-based; text "
           "formats add the line). Metrics: events_replayed, first_failure_index/_line/_t_ns "
           "(the first failed request, of any kind; _line null for binary formats), "
           "reproduced_failures, trace_failures and trace_first_failure_index/_bytes (the "
           "program's own, over the whole trace), failed_at_same_place, peak_live_bytes (the "
           "trace's own demand) and peak_with_failed_bytes (with its failed requests made "
           "again), still_live_blocks/_bytes (never freed), unknown_frees.";
  }

  [[nodiscard]] ParamSpec params() const override {
    return {
        {.name = "trace",
         .type = ParamType::text,
         .default_value = std::string(),
         .help = "the trace file (also --trace FILE)"},
        // Text, checked in validate(): the formats are the registry's, read after registration.
        {.name = "format",
         .type = ParamType::text,
         .default_value = std::string("auto"),
         .help = "the trace's format (also --format): auto reads it from the content, else one of "
                 "`oomlab list`'s trace formats"},
        {.name = "level",
         .type = ParamType::choice,
         .default_value = std::string("tensor"),
         .help = "a format with levels: tensor (what the program asked for) or segment (what the "
                 "driver gave)",
         .choices = {"tensor", "segment"}},
        {.name = "device",
         .type = ParamType::integer,
         .default_value = std::int64_t{0},
         .help = "a format with several devices' traces: whose to replay (not given: the one "
                 "that holds a history)",
         .min_integer = 0},
        {.name = "pace",
         .type = ParamType::choice,
         .default_value = std::string("asap"),
         .help = "asap, or original: keep the recorded gaps between events",
         .choices = {"asap", "original"}},
        {.name = "strict",
         .type = ParamType::flag,
         .default_value = false,
         .help = "a free of an address that is not allocated, or an allocation at one that is, "
                 "is an error (also --strict)"},
    };
  }

  void validate(const Params& p) const override {
    if (p.text("trace").empty()) throw_usage("replay needs a trace: --trace FILE");
    if (p.integer("device") > 1024) throw_usage("replay: device must be at most 1024");
    const std::string& format = p.text("format");
    if (format != "auto" && trace::find_format(format) == nullptr) {
      std::string names = "auto";
      for (const trace::FormatInfo& f : trace::formats())
        names += "|" + f.name;
      throw_usage(fmt::format("--param format: '{}' is not one of {}", format, names));
    }
  }

  [[nodiscard]] bool replays_traces() const override { return true; }

  void prepare(const Params& p, const std::function<void()>& check_stop) override {
    const trace::FormatInfo* named = trace::find_format(p.text("format"));  // null: auto
    // No device named: the one whose trace holds a history (the trace's notice says which).
    const std::optional<std::uint32_t> device =
        p.was_set("device") ? std::optional(static_cast<std::uint32_t>(p.integer("device")))
                            : std::nullopt;
    adopt(p, std::make_shared<const trace::Trace>(trace::load(
                 p.text("trace"), {.format = named ? named->format : trace::Format::automatic,
                                   .level = level_of(p),
                                   .device = device,
                                   .device_option = "-p device=",
                                   .check_stop = check_stop})));
  }

  // A trace already read (a search's trials, whatif's settings: one read for all of them).
  void adopt(const Params& p, const std::shared_ptr<const trace::Trace>& trace) override {
    level_ = level_of(p);
    trace_ = trace;
    // The program's own folders, as its stacks show them: the user's line and what held memory
    // are told apart from a library's on PYTHONPATH, as exec tells them by its command line.
    roots_ = trace::entry_folders(*trace_);
    if (p.flag("strict")) check_strict(*trace_);
  }

  [[nodiscard]] std::shared_ptr<const trace::Trace> input_trace() const override { return trace_; }

  // A snapshot's at the tensor level (none recorded: its model's defaults). Its segment
  // level is what the caching allocator got, which no model of it serves again.
  [[nodiscard]] std::optional<RecordedSettings> recorded_allocator_settings() const override {
    if (!trace_ || !trace_->recorded || level_ != trace::Level::tensor) return std::nullopt;
    return trace_->recorded->allocator_settings.value_or(RecordedSettings{});
  }

  void run(RunContext& ctx) override {
    ProgramReplay& program = ctx.required_extension<ProgramReplay>("replay");
    for (const std::string& notice : trace_->notices)
      ctx.notice(notice);
    for (const std::string& caveat : trace::trace_caveats(*trace_))
      ctx.notice(caveat);
    ctx.phase("replay");
    std::vector<Stream> streams;
    for (std::uint32_t s = 0; s < trace_->streams.size(); ++s)
      streams.push_back(ctx.stream(s));
    const bool original_pace = ctx.params().choice("pace") == "original";
    const auto start = std::chrono::steady_clock::now();
    std::vector<Held> held(trace_->slots);  // one per block live at once, reused as they are freed
    ReplayVerdict verdict(*trace_);
    auto* model = program.allocator_capability<CachingAllocator>();
    SegmentMatch match(*trace_, model != nullptr ? &model->device_calls() : nullptr);
    if (model != nullptr) hint_segment_addresses(*model);
    const auto n = static_cast<std::uint32_t>(trace_->events.size());
    std::uint32_t i = 0;
    if (trace_->recorded && !trace_->recorded->initial_segments.empty()) {
      i = trace_->initial_events;
      if (!place_initial_state(ctx, program, streams, held, verdict)) {
        report(ctx, 0, held);
        verdict.report(ctx);
        return;
      }
    }
    trace::EventReader events(trace_->events);
    // The events before which the program emptied its cache (torch.cuda.empty_cache()), in order.
    static const std::vector<std::uint32_t> kNone;
    const std::vector<std::uint32_t>& emptied =
        trace_->recorded ? trace_->recorded->emptied_cache_before : kNone;
    auto next_emptied = std::lower_bound(emptied.begin(), emptied.end(), i);
    for (; i < n; ++i) {
      const trace::Event& e = events[i];
      if (original_pace) wait_until(ctx, start + std::chrono::nanoseconds(e.t_ns));
      match.before();
      if (next_emptied != emptied.end() && *next_emptied == i) {
        program.trim();
        ++next_emptied;
      }
      const bool went_on = replay_one(ctx, program, i, e, streams[e.stream], held, verdict);
      match.after(i);
      if (!went_on) break;
    }
    if (i == n) {
      match.before();
      if (trace_->recorded && trace_->recorded->release_at_end) program.trim();
      match.after(n);
    }
    report(ctx, i, held);
    verdict.report(ctx);
    match.report(ctx);
  }

 private:
  static trace::Level level_of(const Params& p) {
    return p.choice("level") == "segment" ? trace::Level::segment : trace::Level::tensor;
  }

  struct Held {
    Block block;
    std::uint32_t event = 0;  // the allocation's index in Trace::events, for the leak report
  };

  // The addresses the driver gave the program's segments (those there before the history, then
  // each segment_alloc), for a model of its allocator to break ties between blocks as it did.
  void hint_segment_addresses(CachingAllocator& model) const {
    if (!trace_->recorded) return;
    std::vector<DeviceCall> recorded;
    for (const trace::InitialSegment& s : trace_->recorded->initial_segments) {
      if (!s.expandable) recorded.push_back({DeviceCallKind::segment_alloc, s.bytes, s.address});
    }
    for (const trace::SegmentEntry& e : trace_->recorded->segment_entries) {
      if (e.action == trace::SegmentAction::alloc)
        recorded.push_back({DeviceCallKind::segment_alloc, e.bytes, e.address});
    }
    if (!recorded.empty()) model.hint_device_calls(recorded);
  }

  // What was live when the history began, in the segments that held it; false when it does not
  // fit (the run's OOM is then its first block that did not).
  bool place_initial_state(RunContext& ctx, ProgramReplay& program,
                           const std::vector<Stream>& streams, std::vector<Held>& held,
                           ReplayVerdict& verdict) {
    const std::vector<trace::InitialSegment>& initial = trace_->recorded->initial_segments;
    std::vector<PlacedSegment> segments;
    for (const trace::InitialSegment& s : initial) {
      PlacedSegment placed{.address = s.address,
                           .bytes = s.bytes,
                           .stream = streams[s.stream],
                           .small_pool = s.small_pool,
                           .expandable = s.expandable};
      for (const trace::InitialSegment::Live& b : s.blocks) {
        placed.blocks.push_back(
            {.offset = b.offset, .bytes = b.bytes, .block_bytes = b.block_bytes});
      }
      segments.push_back(std::move(placed));
    }
    const bool had_oom = ctx.oom_recorded();
    std::vector<Block> blocks = program.allocate_placed(segments, "live before the trace began");
    std::size_t k = 0;
    bool fits = true;
    for (const trace::InitialSegment& s : initial) {
      for (const trace::InitialSegment::Live& b : s.blocks) {
        const trace::Event& e = trace_->events[b.event];
        held[e.slot] = Held{blocks[k], b.event};
        if (!blocks[k++] && fits) {
          fits = false;
          verdict.broke(b.event);
          if (!had_oom && ctx.oom_recorded()) describe_oom(program, b.event, held);
        }
      }
    }
    stopped_ = !fits;
    return fits;
  }

  // Where the failing request is in the trace; its frames and the largest blocks then, when
  // recorded.
  void describe_oom(ProgramReplay& program, std::uint32_t failing_at,
                    const std::vector<Held>& held) {
    std::vector<LiveBlock> live;
    for (const Held& h : held) {
      if (h.block.ok()) live.push_back({.bytes = h.block.bytes, .event = h.event});
    }
    program.describe_oom(failing_request(*trace_, failing_at, std::move(live), roots_));
  }

  // False when the replay cannot go on (an allocation the program made failed here).
  bool replay_one(RunContext& ctx, ProgramReplay& program, std::uint32_t index,
                  const trace::Event& e, Stream stream, std::vector<Held>& held,
                  ReplayVerdict& verdict) {
    switch (e.op) {
      case trace::Op::alloc: {
        if (e.slot == trace::Event::kNone) return true;  // zero bytes: nothing to hold
        Held& slot = held[e.slot];
        slot.event = index;
        if (e.refusable) {  // the program goes on without it where it is refused
          slot.block = program.remake_survived_request(stream, e.bytes, "a request it may lose");
          if (!slot.block) {
            ++refused_again_;
            verdict.refused_again(index);
          }
          return true;
        }
        slot.block = ctx.allocate_on(stream, e.bytes, "trace allocation");
        if (!slot.block) {  // the run's OOM, in place of any made-again failure before it
          verdict.broke(index);
          describe_oom(program, index, held);
          stopped_ = true;
          return false;
        }
        return true;
      }
      case trace::Op::free:
        if (e.slot != trace::Event::kNone && held[e.slot].block.ok())
          ctx.release_on(stream, held[e.slot].block);
        return true;
      case trace::Op::failed: {  // the program's own failed request, made again where it was
        if (trace::survived_failure(*trace_, index)) {  // refused, it asked for less and went on
          Block again =
              program.remake_survived_request(stream, e.bytes, "a request the program survived");
          if (again) {
            ctx.release_on(stream, again);
          } else {
            ++refused_again_;
            verdict.refused_again(index);
          }
          return true;
        }
        const bool had_oom = ctx.oom_recorded();
        Block again = program.remake_failed_request(stream, e.bytes, "the trace's failed request");
        if (!again) {
          verdict.reproduced(index);
          if (!had_oom && ctx.oom_recorded()) describe_oom(program, index, held);
        } else {
          ctx.release_on(stream, again);
        }
        return true;
      }
    }
    return true;
  }

  static void wait_until(RunContext& ctx, std::chrono::steady_clock::time_point when) {
    while (std::chrono::steady_clock::now() < when && !ctx.stop_requested()) {
      std::this_thread::sleep_until(
          std::min(when, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    }
  }

  void report(RunContext& ctx, std::size_t replayed, const std::vector<Held>& held);
  void report_leaks(RunContext& ctx, const std::vector<Held>& held);

  std::shared_ptr<const trace::Trace> trace_;
  std::vector<std::string> roots_;  // the program's own folders (trace::entry_folders)
  trace::Level level_ = trace::Level::tensor;
  bool stopped_ = false;
  std::uint64_t refused_again_ = 0;  // requests the program survived, refused here too
};

void Replay::report(RunContext& ctx, std::size_t replayed, const std::vector<Held>& held) {
  const std::uint64_t initial = trace_->initial_events;
  ctx.metric("events_replayed", static_cast<double>(replayed > initial ? replayed - initial : 0));
  ctx.metric("trace_events", static_cast<double>(trace_->events.size() - initial));
  ctx.metric("initial_blocks", static_cast<double>(initial));
  ctx.metric("unknown_frees", static_cast<double>(trace_->unknown_frees));
  ctx.metric("streams", static_cast<double>(trace_->streams.size()));
  // 1: the trace stops at the program's own failure, so any "fits" read from it is a lower bound.
  ctx.metric("trace_stops_at_failure", trace::ends_at_failure(*trace_) ? 1.0 : 0.0);
  const std::vector<std::uint64_t> survived = trace::survived_failure_sizes(*trace_);
  if (!survived.empty()) {
    ctx.metric("trace_survived_refusals", static_cast<double>(survived.size()));
    ctx.metric("survived_refused_again", static_cast<double>(refused_again_));
    ctx.note(fmt::format(
        "{} of the {} requests the program survived being refused were refused here too, and "
        "the replay went on as the program did",
        refused_again_, survived.size()));
  }
  for (const std::string& note : unpaired_entry_notes(*trace_))
    ctx.note(note);
  report_leaks(ctx, held);
}

// What the trace allocated and never freed: a leak, or what the program still held when it ended.
void Replay::report_leaks(RunContext& ctx, const std::vector<Held>& held) {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  const Held* largest = nullptr;
  for (const Held& h : held) {
    if (!h.block.ok()) continue;
    ++count;
    bytes += h.block.bytes;
    if (largest == nullptr || h.block.bytes > largest->block.bytes) largest = &h;
  }
  ctx.metric("still_live_blocks", static_cast<double>(count));
  ctx.metric("still_live_bytes", static_cast<double>(bytes));
  if (largest != nullptr) {
    const trace::Event& e = trace_->events[largest->event];
    ctx.note(
        fmt::format("never freed by the end of the {}: {} blocks, {}; the largest, {}, from {}",
                    stopped_ ? "replay (it stopped at the failure)" : "trace", count,
                    format_bytes(bytes), format_bytes(e.bytes), describe_place(e)));
  }
}

OOMLAB_REGISTER_SCENARIO(Replay)

}  // namespace oomlab
