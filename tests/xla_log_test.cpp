// The trace format `xla` (XLA's allocator log, as exec keeps it) and the model `xla` against a
// real JAX program. tests/data/exec/xla_log_batch4_8gib.txt is the xla-log.txt of `oomlab exec
// --budget 8GiB -- python3 tests/data/exec/jax_lm.py --batch 4 --steps 2` on an H200 (JAX 0.11.2),
// which ran out of memory asking for 4.74 GiB (5,085,851,160 bytes); only the lines the format
// reads are kept (its requests, [mem-debug] allocations and frees, the pool's set-up and dump
// headers; the stacks and occupancy maps, and all but six lines of the host's pool, left out).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "jax/exec/xla_model.hpp"
#include "jax/model/bfc_model.hpp"
#include "jax/model/xla_backend.hpp"
#include "oomlab/backend.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/trace_format.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"
#include "trace/trace_series.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;
using oomlab::trace::Op;

constexpr std::uint64_t kFailedRequest = 5'085'851'160;

std::string fixture() {
  return oomlab::testing::test_data_dir() + "/exec/xla_log_batch4_8gib.txt";
}

oomlab::trace::Trace load(const fs::path& path) {
  return oomlab::trace::load(path, oomlab::trace::LoadOptions{});
}

TEST(XlaLog, TheDevicePoolsRequestsAndFreesUpToTheProgramsOom) {
  const oomlab::trace::Trace trace = load(fixture());
  EXPECT_EQ(oomlab::trace::format_info(trace.format)->name, "xla");
  std::size_t allocs = 0;
  std::size_t frees = 0;
  std::size_t failed = 0;
  for (const oomlab::trace::Event e : trace.events) {
    allocs += e.op == Op::alloc ? 1 : 0;
    frees += e.op == Op::free ? 1 : 0;
    failed += e.op == Op::failed ? 1 : 0;
  }
  EXPECT_EQ(failed, 1U);
  EXPECT_EQ(trace.events[trace.events.size() - 1].op, Op::failed);  // it stops at the OOM
  EXPECT_EQ(trace.events[trace.events.size() - 1].bytes, kFailedRequest);
  EXPECT_TRUE(oomlab::trace::ends_at_failure(trace));
  EXPECT_GT(allocs, 1000U);
  EXPECT_LT(frees, allocs);  // what was live at the OOM stays so
  const oomlab::RecordedSettings* settings = oomlab::trace::allocator_settings(trace);
  ASSERT_NE(settings, nullptr);
  EXPECT_EQ(settings->backend, "xla");
  EXPECT_EQ(settings->get<bool>("preallocate"), true);  // "XLA backend allocating ..."
}

// Every request the program got, the model serves on the pool JAX made from the 8 GiB card; the
// request the program died of, it refuses, as XLA did. On a card of 12 GiB it would have fitted.
TEST(XlaLog, TheModelFailsWhereTheProgramFailedAndNowhereElse) {
  const oomlab::trace::Trace trace = load(fixture());
  const oomlab::BackendInfo* xla = oomlab::find_backend("xla");
  ASSERT_NE(xla, nullptr);
  const oomlab::Params options(xla->options);
  for (const std::uint64_t card : {8_GiB, 12_GiB}) {
    std::uint64_t next = 1_GiB;
    oomlab::jax::BfcModel pool(*oomlab::jax::pool_config(options, card),
                               {.take = [&](std::uint64_t bytes) -> std::optional<std::uint64_t> {
                                  const std::uint64_t at = next;
                                  next += bytes + 1_GiB;
                                  return at;
                                },
                                .give_back = {}});
    std::map<std::uint32_t, std::uint64_t> at_slot;
    std::size_t refused = 0;
    std::uint64_t refused_bytes = 0;
    for (const oomlab::trace::Event e : trace.events) {
      if (e.op == Op::free && e.slot != oomlab::trace::Event::kNone) {
        pool.free(at_slot.at(e.slot));
        continue;
      }
      const std::optional<std::uint64_t> address = pool.allocate(e.bytes);
      if (!address) {
        ++refused;
        refused_bytes = e.bytes;
        continue;
      }
      if (e.op == Op::alloc) at_slot[e.slot] = *address;
    }
    if (card == 8_GiB) {
      EXPECT_EQ(refused, 1U);
      EXPECT_EQ(refused_bytes, kFailedRequest);
    } else {
      EXPECT_EQ(refused, 0U) << "a 12 GiB card's pool (9 GiB) holds the 4.74 GiB request";
    }
  }
}

// exec's model of the run the log came from (an 8 GiB card, JAX's defaults, a process 512 MiB
// beyond its pool): it fails where XLA did, measures what lay beside the pool, and each of JAX's
// settings answers on the card as its own frontier says, the advice naming one that completes.
TEST(XlaLog, ExecsModelReproducesTheOomAndGivesEachSettingsCard) {
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::oom;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {fixture()};
  run.program->peak_bytes = 6'444'548'096 + 512_MiB;  // the preallocated pool and the rest
  oomlab::jax::model_xla_run(run, nullptr);
  ASSERT_EQ(run.models.size(), 1U)
      << (run.program->model_notes.empty() ? "" : run.program->model_notes.front());
  const oomlab::ProgramModel& m = run.models.front();
  EXPECT_EQ(m.outside_allocator_bytes, 512_MiB) << m.outside_measured;
  EXPECT_TRUE(m.reproduced()) << m.reproduction;
  ASSERT_EQ(m.whatif.size(), 4U);
  EXPECT_TRUE(m.whatif[0].as_ran) << "the log says the pool was preallocated: JAX's defaults";
  EXPECT_EQ(m.whatif[1].settings, "XLA_PYTHON_CLIENT_PREALLOCATE=false");
  // The largest share that leaves the 512 MiB beside the pool and 2% of the card: 0.91 (7.28 GiB,
  // over the 1.50 GiB in use and the 4.74 GiB request), where the pool was 0.75.
  EXPECT_EQ(m.whatif[3].settings, "XLA_PYTHON_CLIENT_MEM_FRACTION=0.91");
  EXPECT_TRUE(m.whatif[3].completes_at_budget);
  for (const oomlab::ModelRow& row : m.whatif) {
    ASSERT_TRUE(row.frontier_bytes) << row.setting;
    EXPECT_EQ(row.completes_at_budget, *row.frontier_bytes <= 8_GiB) << row.setting;
    EXPECT_EQ(*row.model_frontier_bytes + 512_MiB, *row.frontier_bytes) << row.setting;
  }
  // The 4.74 GiB request and what was live: over a 6 GiB pool, under a 9 GiB one.
  EXPECT_GT(*m.whatif[0].frontier_bytes, 8_GiB);
  EXPECT_LE(*m.whatif[0].frontier_bytes, 12_GiB);
  if (m.advised) {
    EXPECT_TRUE(m.whatif[*m.advised].completes_at_budget);
    EXPECT_NE(m.advice.find(m.whatif[*m.advised].settings), std::string::npos) << m.advice;
  } else {
    EXPECT_NE(m.advice.find("none of JAX's allocator settings"), std::string::npos) << m.advice;
  }
}

constexpr const char* kHead =
    "I1129 02:43:58.030452     492 se_gpu_pjrt_client.cc:1324] Using BFC allocator.\n"
    "I1129 02:43:58.030553     492 gpu_helpers.cc:174] XLA backend will use up to 6.00GiB "
    "(6442450944 bytes) on device 0 for BFCAllocator.\n";

class XlaLogLines : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("oomlab-xla-log-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt");
  }
  void TearDown() override { fs::remove(path_); }
  // The log's head, then `lines`.
  oomlab::trace::Trace load_lines(std::string_view lines) {
    std::ofstream(path_) << kHead << lines;
    return load(path_);
  }
  fs::path path_;
};

// A refusal (its answer's address 0) is its request's, at the request's line; what another
// thread logs meanwhile comes before it.
TEST_F(XlaLogLines, ARefusalIsItsRequestsAndOtherPoolsAreLeftOut) {
  const oomlab::trace::Trace trace = load_lines(
      "I1129 02:43:58.1 492 x] ignored\n"
      "I1129 02:43:58.371733     492 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,xla_gpu_host_bfc,4,0x482200000,*** Begin stack trace ***\n"
      "I1129 02:43:58.384612     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 1024 "
      "alignment=64\n"
      "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,GPU_0_bfc,1024,0x302000000,*** Begin stack trace ***\n"
      "I1129 02:43:58.390000     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 2048 "
      "alignment=64\n"
      "I1129 02:43:58.391000     493 bfc_allocator.cc:388] [mem-debug] "
      "DeallocateRaw,GPU_0_bfc,1024,0x302000000,*** Begin stack trace ***\n"
      "I1129 02:43:58.392000     492 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,GPU_0_bfc,2048,0,*** Begin stack trace ***\n");
  ASSERT_EQ(trace.events.size(), 3U);
  EXPECT_EQ(trace.events[0].op, Op::alloc);
  EXPECT_EQ(trace.events[1].op, Op::free);  // the other thread's free, logged first
  EXPECT_EQ(trace.events[2].op, Op::failed);
  EXPECT_EQ(trace.events[2].bytes, 2048U);
  EXPECT_EQ(trace.events[2].line, 7U) << "the request's line, not its answer's (9)";
  EXPECT_EQ(oomlab::trace::allocator_settings(trace)->get<bool>("preallocate"), false);
}

// A step's log at `batch`: a persistent 1 GiB buffer, then the step's temp of 512 MiB a batch,
// freed; each request as XLA logs it, then its allocation.
std::string step_log(std::uint64_t batch) {
  const auto alloc = [](std::uint64_t bytes, const char* address) {
    return "I1129 02:43:58.384612     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc " +
           std::to_string(bytes) +
           " alignment=64\n"
           "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
           "AllocateRaw,GPU_0_bfc," +
           std::to_string(bytes) + "," + address + ",\n";
  };
  const std::uint64_t temp = batch * 512_MiB;
  return "I1129 02:43:58.030495     492 gpu_helpers.cc:162] XLA backend allocating 6.00GiB "
         "(6442450944 bytes) on device 0 for BFCAllocator.\n" +
         alloc(1_GiB, "0x302000000") + alloc(temp, "0x342000000") +
         "I1129 02:43:58.391000     492 bfc_allocator.cc:388] [mem-debug] "
         "DeallocateRaw,GPU_0_bfc," +
         std::to_string(temp) + ",0x342000000,\n";
}

// fit exec's prediction from two runs' logs: the pool is 0.75 of the card whatever the process
// holds beside it, and its regions come from what that leaves. 1 GiB + 512 MiB a batch in a
// 6 GiB pool: batch 10 fits, 11 does not; with 2.5 GiB beside the pool on an 8 GiB card the
// 6 GiB preallocation is refused and asked again at 0.9 of it (as XLA did on an H100: 59.38 GiB
// refused, then 53.45 GiB), 5.40 GiB: batch 8 fits, 9 does not.
TEST_F(XlaLogLines, TwoRunsLogsPredictTheLargestBatchOnTheCard) {
  std::vector<oomlab::trace::SeriesPoint> points;
  for (const std::uint64_t batch : {1U, 2U}) {
    std::ofstream(path_) << step_log(batch);
    points.push_back(
        {.value = batch, .trace = std::make_shared<const oomlab::trace::Trace>(load(path_))});
  }
  const oomlab::trace::TraceSeries series("batch", points);
  for (const std::uint64_t outside : {std::uint64_t{0}, 1_GiB, 2560_MiB}) {
    const oomlab::FitResult f =
        oomlab::jax::fit_xla_series({.series = series,
                                     .range = {.name = "batch", .lo = 2, .hi = 64},
                                     .budget_bytes = 8_GiB - outside,
                                     .outside_bytes = outside});
    EXPECT_EQ(f.answer, outside < 2_GiB ? 10U : 8U) << outside;
    EXPECT_EQ(f.beyond, outside < 2_GiB ? 11U : 9U) << outside;
  }
  const auto card = oomlab::jax::frontier_xla_series({.series = series,
                                                      .range = {.name = "batch", .lo = 4, .hi = 4},
                                                      .budget_bytes = 7_GiB,
                                                      .outside_bytes = 1_GiB});
  ASSERT_TRUE(card);
  // 3 GiB at batch 4 in a pool of 0.75 of the card: a card of 4 GiB, less the 1 GiB beside it.
  EXPECT_EQ(*card, 3_GiB);
}

// A program that grew its pool (the log's "will use up to"): JAX's defaults are a setting to
// set then, XLA_PYTHON_CLIENT_PREALLOCATE=true, and the row it ran with is preallocation off.
TEST_F(XlaLogLines, AGrownPoolsRunIsModelledAsGrownAndItsDefaultsAreASetting) {
  std::ofstream(path_) << kHead
                       << "I1129 02:43:58.384612     492 bfc_allocator.cc:333] AllocateRaw "
                          "GPU_0_bfc 1073741824 alignment=64\n"
                          "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
                          "AllocateRaw,GPU_0_bfc,1073741824,0x302000000,\n"
                          "I1129 02:43:58.390000     492 bfc_allocator.cc:333] AllocateRaw "
                          "GPU_0_bfc 5905580032 alignment=64\n"
                          "I1129 02:43:58.400000     492 bfc_allocator.cc:1385] BFCAllocator "
                          "dump for GPU_0_bfc\n"
                          "I1129 02:43:58.400100     492 bfc_allocator.cc:388] [mem-debug] "
                          "AllocateRaw,GPU_0_bfc,5905580032,0,\n";
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::oom;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {path_};
  run.program->peak_bytes = 2_GiB;
  oomlab::jax::model_xla_run(run, nullptr);
  ASSERT_EQ(run.models.size(), 1U)
      << (run.program->model_notes.empty() ? "" : run.program->model_notes.front());
  const oomlab::ProgramModel& m = run.models.front();
  EXPECT_EQ(m.owner, "XLA");
  EXPECT_TRUE(m.whatif[1].as_ran) << "the log's pool was grown";
  EXPECT_EQ(m.whatif[0].settings, "XLA_PYTHON_CLIENT_PREALLOCATE=true");
  EXPECT_TRUE(m.reproduced()) << m.reproduction;
  if (m.advised) {
    EXPECT_FALSE(m.whatif[*m.advised].settings.empty());
  }
}

// JAX 0.11.2 with XLA_PYTHON_CLIENT_PREALLOCATE=false also sets up a pool for collectives on the
// device, logged in the same words (measured on an H200): its limit is not the device pool's.
TEST_F(XlaLogLines, TheCollectivesPoolsSetUpLineIsNotTheDevicePools) {
  const oomlab::trace::Trace trace = load_lines(
      "I1129 02:43:58.030600     492 gpu_helpers.cc:206] XLA backend will use up to "
      "144271474688 bytes on device 0 for CollectiveBFCAllocator.\n"
      "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,GPU_0_bfc,1024,0x302000000,\n");
  const oomlab::RecordedSettings* settings = oomlab::trace::allocator_settings(trace);
  ASSERT_NE(settings, nullptr);
  EXPECT_EQ(settings->get<oomlab::Bytes>("limit").value_or(oomlab::Bytes{}).value, 6_GiB);
  EXPECT_EQ(settings->get<bool>("preallocate"), false);
}

// A request the pool gave up on (its dump) is the program's death where what the program asked
// for after it is under a tenth of it (JAX dispatches ahead: measured, a convnet refused 7.12 GiB
// made its next step's images, 73.5 MiB, before it raised); more, and the program went on.
TEST_F(XlaLogLines, ARefusalIsTheDeathUnlessTheProgramAskedATenthOfItAfter) {
  const auto log = [](std::uint64_t after) {
    return fmt::format(
        "I1129 02:43:58.100000     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 1073741824 "
        "alignment=64\n"
        "I1129 02:43:58.200000     492 bfc_allocator.cc:1385] BFCAllocator dump for GPU_0_bfc\n"
        "I1129 02:43:58.200100     492 bfc_allocator.cc:388] [mem-debug] "
        "AllocateRaw,GPU_0_bfc,1073741824,0,\n"
        "I1129 02:43:58.300000     492 bfc_allocator.cc:388] [mem-debug] "
        "AllocateRaw,GPU_0_bfc,{},0x302000000,\n",
        after);
  };
  const oomlab::trace::Trace died = load_lines(log(80_MiB));
  ASSERT_EQ(died.events.size(), 1U);
  EXPECT_EQ(died.events[0].op, Op::failed);
  EXPECT_TRUE(oomlab::trace::stops_short(died));
  EXPECT_EQ(oomlab::trace::fatal_failure_at(died), 0U);
  const oomlab::trace::Trace went_on = load_lines(log(200_MiB));
  ASSERT_EQ(went_on.events.size(), 2U);
  EXPECT_EQ(went_on.events[1].op, Op::alloc);
  EXPECT_EQ(oomlab::trace::fatal_failure_at(went_on), oomlab::trace::Event::kNone);
  // A program that completed died of nothing: its log is read whole.
  std::ofstream(path_) << kHead << log(80_MiB);
  const oomlab::trace::Trace completed = oomlab::trace::load(path_, {.completed = true});
  ASSERT_EQ(completed.events.size(), 2U);
  EXPECT_EQ(oomlab::trace::fatal_failure_at(completed), oomlab::trace::Event::kNone);
}

// A compile that failed after its autotuner's refusals (measured, JAX 0.11.2: a GRU refused
// 12.02 GiB on a compiler thread, which then asked 4.02 GiB more, before the raise): the program
// went on asking, so the log alone says it survived; the request its message names was its death.
TEST_F(XlaLogLines, TheRequestTheRaiseNamesIsTheDeathWhereTheLogWentOn) {
  std::ofstream(path_)
      << kHead
      << "I1129 02:43:58.100000     600 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 12901679104 "
         "alignment=64\n"
         "I1129 02:43:58.200000     600 bfc_allocator.cc:1385] BFCAllocator dump for GPU_0_bfc\n"
         "I1129 02:43:58.200100     600 bfc_allocator.cc:388] [mem-debug] "
         "AllocateRaw,GPU_0_bfc,12901679104,0,\n"
         "I1129 02:43:58.300000     600 bfc_allocator.cc:388] [mem-debug] "
         "AllocateRaw,GPU_0_bfc,4311744512,0x302000000,\n"
         "I1129 02:43:58.300100     600 bfc_allocator.cc:388] [mem-debug] "
         "DeallocateRaw,GPU_0_bfc,4311744512,0x302000000,\n";
  const oomlab::trace::Trace alone = oomlab::trace::load(path_, {});
  EXPECT_EQ(oomlab::trace::fatal_failure_at(alone), oomlab::trace::Event::kNone);
  const oomlab::trace::Trace told = oomlab::trace::load(path_, {.died_asking = 12906376724});
  ASSERT_EQ(told.events.size(), 1U);
  EXPECT_EQ(oomlab::trace::fatal_failure_at(told), 0U);
  const oomlab::trace::Trace other = oomlab::trace::load(path_, {.died_asking = 2_GiB});
  EXPECT_EQ(other.events.size(), 3U) << "no refusal of that size: the log's own rule";
  // exec's model, given the run whose raise was the autotuner's: it fails where the pool did.
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::oom;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {path_};
  run.program->peak_bytes = 6_GiB + 600_MiB;
  run.oom.emplace().request_bytes = 12906376724;
  run.oom->program.emplace().line =
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Failed to get configs for: 8 out of 41 "
      "instructions. See logs for all failures. Example failure: ";
  oomlab::jax::model_xla_run(run, nullptr);
  ASSERT_EQ(run.models.size(), 1U)
      << (run.program->model_notes.empty() ? "" : run.program->model_notes.front());
  EXPECT_TRUE(run.models.front().reproduced()) << run.models.front().reproduction;
  EXPECT_EQ(run.models.front().program_entry, 0U) << "the refusal is the death";
}

// The regions the pool took, as its log records them ("Extending allocation by ..." then, on the
// same thread, "Allocated memory at A to B"), are what exec's model takes from the process's
// peak for what lay beside the pool: measured, a card too small for the pool's limit gave it nine
// tenths of it, where the model's own pool would hold the whole limit.
TEST_F(XlaLogLines, ThePoolsRegionsAsLoggedAreWhatLayBesideItsPeak) {
  std::ofstream(path_)
      << kHead
      << "I1129 02:43:58.100000     492 bfc_allocator.cc:223] Extending allocation by 2.00GiB "
         "bytes for GPU_0_bfc.\n"
         "I1129 02:43:58.100001     500 bfc_allocator.cc:223] Extending allocation by 2.00MiB "
         "bytes for xla_gpu_host_bfc.\n"
         "I1129 02:43:58.100002     500 bfc_allocator.cc:233] Allocated memory at 0x482200000 to "
         "0x482400000\n"
         "I1129 02:43:58.100003     492 bfc_allocator.cc:233] Allocated memory at 0x302000000 to "
         "0x382000000\n"
         "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
         "AllocateRaw,GPU_0_bfc,1073741824,0x302000000,\n";
  const oomlab::trace::Trace trace = load(path_);
  const oomlab::RecordedSettings* settings = oomlab::trace::allocator_settings(trace);
  ASSERT_NE(settings, nullptr);
  EXPECT_EQ(settings->get<oomlab::Bytes>("regions").value_or(oomlab::Bytes{}).value, 2_GiB)
      << "the host pool's region is not the device pool's";
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::completed;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {path_};
  run.program->peak_bytes = 2_GiB + 600_MiB;
  oomlab::jax::model_xla_run(run, nullptr);
  ASSERT_EQ(run.models.size(), 1U)
      << (run.program->model_notes.empty() ? "" : run.program->model_notes.front());
  EXPECT_EQ(run.models.front().outside_allocator_bytes, 600_MiB)
      << run.models.front().outside_measured;
}

// A small program (a GRU at batch 1: a 6 GiB pool, 622 MiB beside it, a few MiB asked) has its
// settings' cards searched down past what lies beside the pool: those cards fail, and the model
// still answers (measured: it said nothing, its search refused at a card of 518 MiB).
TEST_F(XlaLogLines, ASmallProgramsCardsAreSearchedBelowWhatLiesBesideThePool) {
  std::ofstream(path_)
      << kHead
      << "I1129 02:43:58.100000     492 bfc_allocator.cc:223] Extending allocation by 6.00GiB "
         "bytes for GPU_0_bfc.\n"
         "I1129 02:43:58.100003     492 bfc_allocator.cc:233] Allocated memory at 0x302000000 to "
         "0x482000000\n"
         "I1129 02:43:58.384612     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 4194304 "
         "alignment=64\n"
         "I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
         "AllocateRaw,GPU_0_bfc,4194304,0x302000000,\n"
         "I1129 02:43:58.391000     492 bfc_allocator.cc:388] [mem-debug] "
         "DeallocateRaw,GPU_0_bfc,4194304,0x302000000,\n";
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::completed;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {path_};
  run.program->peak_bytes = 6_GiB + 622_MiB;
  oomlab::jax::model_xla_run(run, nullptr);
  ASSERT_EQ(run.models.size(), 1U)
      << (run.program->model_notes.empty() ? "" : run.program->model_notes.front());
  const oomlab::ProgramModel& m = run.models.front();
  EXPECT_EQ(m.outside_allocator_bytes, 622_MiB) << m.outside_measured;
  for (const oomlab::ModelRow& row : m.whatif) {
    EXPECT_TRUE(row.completes_at_budget) << row.setting;
    ASSERT_TRUE(row.frontier_bytes) << row.setting;
    EXPECT_GT(*row.frontier_bytes, 622_MiB) << row.setting << ": the card holds what lies beside";
  }
}

// An OOM raised as XLA compiled the step (its autotuner refused every candidate of some
// instructions; measured, JAX 0.11.2): the cause says the step never ran, once, snapshot or not.
TEST(XlaCompileOom, TheAutotunersFailureIsSaidInTheCauseOnce) {
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::oom;
  run.budget_bytes = 8_GiB;
  run.program.emplace();
  run.oom.emplace().program.emplace().line =
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Failed to get configs for: 8 out of 41 "
      "instructions. See logs for all failures. Example failure: ";
  run.oom->diagnosis.evidence = "206.00 MiB in use + 12.02 GiB requested";
  oomlab::jax::model_xla_run(run, nullptr);
  oomlab::jax::model_xla_run(run, nullptr);  // a remodel
  const std::string& evidence = run.oom->diagnosis.evidence;
  EXPECT_NE(evidence.find("; while XLA compiled the step, not while it ran: its autotuner was "
                          "refused the memory to time any candidate of 8 out of 41 instructions"),
            std::string::npos)
      << evidence;
  EXPECT_EQ(evidence.find("compiled the step"), evidence.rfind("compiled the step")) << evidence;
  run.oom->program->line = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory";
  run.oom->diagnosis.evidence = "x";
  oomlab::jax::model_xla_run(run, nullptr);
  EXPECT_EQ(run.oom->diagnosis.evidence, "x") << "a step that ran out as it ran";
}

TEST_F(XlaLogLines, ABadSizeNamesItsLine) {
  try {
    static_cast<void>(
        load_lines("I1129 02:43:58.384700     492 bfc_allocator.cc:388] [mem-debug] "
                   "AllocateRaw,GPU_0_bfc,many,0x302000000,\n"));
    FAIL() << "no error";
  } catch (const oomlab::Error& e) {
    EXPECT_EQ(e.kind(), oomlab::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find(":3: bytes: 'many' is not a number"), std::string::npos)
        << e.what();
  }
}

TEST_F(XlaLogLines, ALogWithoutThePoolsEventsSaysHowToRecordThem) {
  try {
    static_cast<void>(load_lines(""));
    FAIL() << "no error";
  } catch (const oomlab::Error& e) {
    EXPECT_NE(std::string(e.what()).find("TF_CPP_VMODULE=bfc_allocator=4"), std::string::npos)
        << e.what();
  }
}

}  // namespace
