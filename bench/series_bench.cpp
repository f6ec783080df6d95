// Issue 36's speed target: a program's snapshots at batch 1 and 2 aligned, then the frontier
// table of 64 batch values x 6 PyTorch settings made from them (each value's trace made in
// memory and replayed on the model), in at most 10 s. Beside it, its peer: one what-if table of
// one real snapshot (6 frontiers), so that the table reads as so many what-ifs. The series is
// tests/data/series/series.tgz's diffusers pipeline (sd_b1, sd_b2: 11,265 and 11,329 entries).
#include <benchmark/benchmark.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp is POSIX

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>

#include "oomlab/trace_builder.hpp"
#include "pytorch/settings/series_table.hpp"
#include "pytorch/settings/whatif.hpp"
#include "trace/trace.hpp"
#include "trace/trace_series.hpp"

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives

namespace {

namespace fs = std::filesystem;
using oomlab::trace::SeriesPoint;
using oomlab::trace::Trace;
using oomlab::trace::TraceSeries;

// The series unpacked once into a folder of this process's own.
const fs::path& series_folder() {
  static const fs::path folder = [] {
    std::string pattern = (fs::temp_directory_path() / "oomlab-series-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return fs::path();
    const std::string command = "tar -xzf '" OOMLAB_TEST_DATA "/series/series.tgz' -C '" + pattern +
                                "' ./sd_b1.pickle ./sd_b2.pickle ./sd_b8.pickle";
    return std::system(command.c_str()) == 0 ? fs::path(pattern) : fs::path();
  }();
  return folder;
}

std::shared_ptr<const Trace> snapshot(const std::string& name) {
  return std::make_shared<const Trace>(oomlab::trace::load(series_folder() / name, {}));
}

void BM_SeriesAlign(benchmark::State& state) {
  const auto b1 = snapshot("sd_b1.pickle");
  const auto b2 = snapshot("sd_b2.pickle");
  for (auto _ : state) {
    const TraceSeries series("batch", {{1, b1}, {2, b2}});
    benchmark::DoNotOptimize(series.fit().matched);
  }
  state.counters["entries"] = static_cast<double>(b2->source_entries);
}
BENCHMARK(BM_SeriesAlign)->Unit(benchmark::kMillisecond);

// Alignment and the table of `count` batch values (1..count) x 6 settings, per iteration.
void align_and_table(benchmark::State& state, const std::shared_ptr<const Trace>& b1,
                     const std::shared_ptr<const Trace>& b2, std::size_t count) {
  std::vector<std::uint64_t> values(count);
  std::iota(values.begin(), values.end(), 1);
  std::size_t replays = 0;
  for (auto _ : state) {
    const TraceSeries series("batch", {{1, b1}, {2, b2}});
    const oomlab::torch::SeriesTable table = oomlab::torch::series_table(
        {.series = &series, .range = {"batch", 1, 64}, .values = values});
    replays = table.replays;
  }
  state.counters["entries"] = static_cast<double>(b2->source_entries);
  state.counters["cells"] = static_cast<double>(values.size() * 6);
  state.counters["replays"] = static_cast<double>(replays);
}

void BM_SeriesTable(benchmark::State& state) {
  align_and_table(state, snapshot("sd_b1.pickle"), snapshot("sd_b2.pickle"),
                  static_cast<std::size_t>(state.range(0)));
}
BENCHMARK(BM_SeriesTable)->Arg(4)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(1);

// A program that runs the pipeline twice in one process (two models, two generations): each
// snapshot's requests twice over, with their frames, 22,530 and 22,658 entries: the issue's
// 20,000-entry size, which none of the captured programs reaches in one run.
std::shared_ptr<const Trace> twice(const Trace& once) {
  oomlab::trace::TraceBuilder b(once.format, once.source);
  b.trace().recorded.emplace();
  oomlab::trace::RecordedState& recorded = *b.trace().recorded;
  recorded.stacks = once.recorded->stacks;
  recorded.allocator_settings = once.recorded->allocator_settings;
  std::vector<std::uint64_t> slot_address(once.slots, 0);
  std::uint64_t index = 0;
  for (std::uint64_t copy = 0; copy < 2; ++copy) {
    oomlab::trace::EventReader events(once.events);
    for (std::uint32_t p = 0; p < once.events.size(); ++p) {
      const oomlab::trace::Event& e = events[p];
      if (e.slot == oomlab::trace::Event::kNone && e.op != oomlab::trace::Op::failed) continue;
      std::uint64_t address = 0;
      if (e.op == oomlab::trace::Op::alloc) {
        address = (copy << 40U) + ((std::uint64_t{p} + 1) << 12U);
        slot_address[e.slot] = address;
      } else if (e.op == oomlab::trace::Op::free) {
        address = slot_address[e.slot];
      }
      b.add(e.op, e.bytes, address, once.streams[e.stream], 0, e.t_ns, index, index + 1);
      ++index;
      recorded.event_stacks.resize(b.trace().events.size(), oomlab::trace::Event::kNone);
      recorded.event_stacks.back() = p < once.recorded->event_stacks.size()
                                         ? once.recorded->event_stacks[p]
                                         : oomlab::trace::Event::kNone;
    }
  }
  Trace made = b.finish();
  made.source_entries = 2 * once.source_entries;  // the snapshot's entries, twice
  return std::make_shared<const Trace>(std::move(made));
}

// The same table (64 values x 6 settings) on the twice-run program's 20,000-entry snapshots.
void BM_SeriesTable20k(benchmark::State& state) {
  align_and_table(state, twice(*snapshot("sd_b1.pickle")), twice(*snapshot("sd_b2.pickle")), 64);
}
BENCHMARK(BM_SeriesTable20k)->Unit(benchmark::kMillisecond)->Iterations(1);

// The peer: one real snapshot's what-if table (6 frontiers), read from its file.
void BM_WhatIfOneSnapshot(benchmark::State& state) {
  const auto b8 = snapshot("sd_b8.pickle");
  for (auto _ : state) {
    const oomlab::torch::WhatIfResult r =
        oomlab::torch::what_if({.trace = series_folder() / "sd_b8.pickle", .loaded = b8});
    benchmark::DoNotOptimize(r.rows.size());
  }
}
BENCHMARK(BM_WhatIfOneSnapshot)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
