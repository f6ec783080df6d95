// Hypothesis (i) of bench/NOTES.md: where a replay's time over the bare loop goes, split as (g)
// and (h) split the fill's. In each iteration, the order turning, the same 2M-event trace runs
// through each of:
//   bare          the pool calls alone (as BM_ReplayVsBareLoopOnAsync's bare loop), the time
//                 inside each call read around it
//   bare_traffic  the same, writing after each call the 64 fresh bytes an event takes in the
//                 recorder's log (a buffer touched beforehand, as the log's chunks are)
//   recorded      oomlab's async backend under the recorder (a null sink), the time inside the
//                 backend read by an adaptor between the two
//   run           a whole oomlab run of the replay (scenario, harness, live-block table): its
//                 total only, as no adaptor fits inside the runner
// Counters, ns an event, medians over the iterations: V_ns (the loop), V_in_call_ns and
// V_outside_ns (inside the allocation and free calls and everything else); run_ns; and ratio, the
// median of the iterations' run / bare (BM_ReplayVsBareLoopOnAsync's figure).
#include <benchmark/benchmark.h>

#if defined(OOMLAB_WITH_CUDA)

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "device/device.hpp"
#include "in_call_timer.hpp"
#include "record/event_clock.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"
#include "replay_fixture.hpp"
#include "trace/trace.hpp"

namespace oomlab::bench {
namespace {

using LoopTime = BareLoopTime;

using Line = std::array<std::uint64_t, 8>;  // one event's 64 bytes

// oomlab's async backend under the recorder, the backend's calls timed from between the two.
LoopTime recorded_loop(const trace::Trace& t) {
  const DeviceSession session(0);
  std::uint64_t inside_ns = 0;
  EventLog log(std::make_unique<NullSink>());
  auto timed = std::make_unique<InCallTimer>(
      make_backend(BackendKind::async, Params(find_backend("async")->options),
                   {.budget_bytes = session.free_bytes(), .device = 0, .stream = session.stream()}),
      inside_ns);
  auto rec = std::make_unique<Recording>(std::move(timed), log, Recording::Clock::now());
  std::vector<std::pair<void*, std::uint64_t>> blocks(t.slots);
  trace::EventReader events(t.events);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = events[i];
    if (e.slot == trace::Event::kNone) continue;
    if (e.op == trace::Op::alloc) {
      blocks[e.slot] = {rec->allocate(e.bytes, session.stream()).ptr, e.bytes};
    } else if (e.op == trace::Op::free) {
      rec->deallocate(blocks[e.slot].first, blocks[e.slot].second, session.stream());
      blocks[e.slot] = {};
    }
  }
  const LoopTime time{
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      .in_call_seconds = static_cast<double>(inside_ns) * 1e-9};
  for (const auto& [ptr, bytes] : blocks) {  // what the trace never freed
    if (ptr != nullptr) rec->deallocate(ptr, bytes, session.stream());
  }
  session.synchronize();
  rec.reset();  // the backend gives its pool back before the log closes, as a run does
  log.close();
  return time;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

void BM_ReplayInCallSplitOnAsync(benchmark::State& state) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return state.SkipWithError("needs a CUDA device");
  const trace::Trace t = trace::load(synthetic_rmm_log(kReplayEvents), {});
  const RunConfig config = replay_config("async", {.kind = BudgetRequest::Kind::all});
  std::vector<Line> traffic(t.events.size(), Line{});  // touched here, as the log's chunks are
  std::map<std::string, std::vector<double>> ns;       // per event, by counter
  std::vector<double> ratios;
  const double per_event = 1e9 / static_cast<double>(t.events.size());
  const auto keep = [&](const std::string& name, const LoopTime& l) {
    ns[name + "_ns"].push_back(l.seconds * per_event);
    ns[name + "_in_call_ns"].push_back(l.in_call_seconds * per_event);
    ns[name + "_outside_ns"].push_back((l.seconds - l.in_call_seconds) * per_event);
  };
  std::size_t turn = 0;
  for (auto _ : state) {
    double bare_seconds = 0;
    double run_seconds = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      switch ((k + turn) % 4) {
        case 0: {
          const BareLoopTime bare = bare_replay_loop(t, {.timed = true});
          bare_seconds = bare.seconds;
          keep("bare", bare);
          break;
        }
        case 1:
          keep("bare_traffic", bare_replay_loop(t, {.timed = true, .traffic = &traffic}));
          break;
        case 2:
          keep("recorded", recorded_loop(t));
          break;
        default: {
          const RunResult r = run_scenario(config);
          if (r.outcome != Outcome::completed)
            return state.SkipWithError(("replay: " + r.error_message).c_str());
          run_seconds = r.duration_ms / 1e3;
          ns["run_ns"].push_back(run_seconds * per_event);
        }
      }
    }
    ++turn;
    ratios.push_back(run_seconds / bare_seconds);
    state.SetIterationTime(run_seconds);
  }
  for (const auto& [name, values] : ns)
    state.counters[name] = median(values);
  state.counters["ratio"] = median(ratios);
}
BENCHMARK(BM_ReplayInCallSplitOnAsync)
    ->UseManualTime()
    ->Iterations(4)  // each variant first once (~10 s an iteration)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace oomlab::bench

#endif
