// The fills that bench/fill_hypotheses.cpp compares: the bare loop of CUDA pool calls, and the same
// loop with one piece of the harness added (a clock read, the live-block table, the recorder, ...).
// Each fills the fixture's budget (a ballast holds the rest of the device) from a fresh pool with
// 64 KiB blocks until the first refusal; only that loop is timed, the set-up and frees are not.
#pragma once

#if defined(OOMLAB_WITH_CUDA)

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "oomlab/scenario.hpp"
#include "record/event_log.hpp"
#include "run/live_blocks.hpp"

namespace oomlab::bench {

enum class Variant : std::uint8_t {
  bare,                 // cudaMallocFromPoolAsync on a pool made as the async backend makes it
  clock_read,           // + the recorder's clock read (EventClock::now_ns) a block
  live_table,           // + the harness's live-block table, new for the fill (as a run makes it)
  live_table_warm,      // + the same table kept from fill to fill: grown and touched already
  block_list_grown,     // + a Block a block into a list grown by doubling (the scenario, before)
  block_list_reserved,  // + the same list reserved up front (the scenario, now)
  backend_direct,       // oomlab's async allocator object, called as its own (final) class
  backend_virtual,      // the same object through Allocator& (a virtual call a block)
  recorded,             // + the Recording adaptor and a new event log, no events.csv (a run's)
  recorded_warm_log,    // the same with one event log kept from fill to fill (chunks used)
  recorded_csv,         // the same as `recorded`, writing events.csv (the writer thread works)
  harness,              // a scenario's try_allocate: HarnessContext + Recording + backend
  bare_timed,           // the bare loop with the time inside each pool call read around it
  harness_timed,        // `harness` with the time inside the backend read around each call
  bare_timed_traffic,   // `bare_timed` writing as many fresh bytes a block as the harness does
};

[[nodiscard]] std::string_view variant_name(Variant v);

struct FillTime {
  double seconds = 0;
  std::size_t blocks = 0;
  double faults = 0;  // minor page faults of the filling thread while it filled
  // The *_timed variants: the part of `seconds` spent inside the allocation call (the driver's
  // pool call; for the harness, the backend object around it). 0 for the others.
  double in_call_seconds = 0;
};

// What every fill of one benchmark shares: the stream, the ballast, the arrays the blocks are
// kept in (touched before any fill), and the warm variants' table and log.
struct FillFixture {
  FillFixture();
  ~FillFixture();
  FillFixture(const FillFixture&) = delete;
  FillFixture& operator=(const FillFixture&) = delete;
  FillFixture(FillFixture&&) = delete;
  FillFixture& operator=(FillFixture&&) = delete;

  void* stream = nullptr;
  void* ballast = nullptr;
  std::vector<void*> ptrs;
  std::vector<Block> blocks;
  // bare_timed_traffic's writes: two cache lines a block (an event and a live-table entry with
  // the scenario's Block), touched before any fill as the harness's chunks are.
  std::vector<std::array<std::uint64_t, 16>> traffic;
  LiveBlocks warm_table;
  std::optional<EventLog> warm_log;
};

[[nodiscard]] bool have_device();
[[nodiscard]] FillTime run_variant(Variant v, FillFixture& fixture);

}  // namespace oomlab::bench

#endif
