// The model's answers for an exec'd PyTorch program, on real snapshots of real jobs (recorded on
// an H100, tests/data/pytorch): each RunResult is built as an exec of that job would have left
// it (its budget, PyTorch's own OOM message from captures.jsonl, NVML's peak), and the model must
// find the program's own OOM entry, the memory outside the allocator, and advise only a setting
// it shows completing.
#include "pytorch/exec/program_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/exec_frontier.hpp"
#include "exec/oom_message.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kJobs = fs::path(testing::test_data_dir()) / "pytorch";

// captures.jsonl's line for one snapshot: what PyTorch itself said and counted.
json capture_of(const std::string& snapshot) {
  std::ifstream in(kJobs / "captures.jsonl");
  for (std::string line; std::getline(in, line);) {
    json c = json::parse(line);
    if (fs::path(c.at("out").get<std::string>()).filename() == snapshot) return c;
  }
  throw std::runtime_error("no capture of " + snapshot);
}

// An exec of a job whose PyTorch printed `message` (as its traceback's last line does).
RunResult exec_oom(const std::string& snapshot, std::uint64_t budget) {
  const json capture = capture_of(snapshot);
  const auto said =
      recognise_oom_line("torch.OutOfMemoryError: " + capture.at("message").get<std::string>());
  EXPECT_TRUE(said && said->process_used_bytes && said->framework_allocated_bytes);
  RunResult r;
  r.scenario = "exec";
  r.allocator = "exec";
  r.budget_bytes = budget;
  r.outcome = Outcome::oom;
  r.program = ProgramRun{.command = {"python3", "torch_job.py", "grow"},
                         .peak_bytes = *said->process_used_bytes,
                         .usage_source = "nvml-processes",
                         .snapshots = {kJobs / snapshot}};
  OomRecord oom;
  oom.request_bytes = said->request_bytes.value_or(0);
  oom.live_bytes = *said->process_used_bytes;
  oom.diagnosis.advice = "the message's own advice";
  oom.program = ProgramMessage{.framework = said->framework,
                               .line = said->line,
                               .process_used_bytes = said->process_used_bytes,
                               .framework_allocated_bytes = said->framework_allocated_bytes,
                               .framework_cached_free_bytes = said->framework_cached_free_bytes};
  r.oom = oom;
  return r;
}

// What the message says lies outside PyTorch's allocator: in use, less allocated and cached.
std::uint64_t outside_said(const RunResult& r) {
  const ProgramMessage& m = *r.oom->program;
  return *m.process_used_bytes - *m.framework_allocated_bytes - *m.framework_cached_free_bytes;
}

TEST(ProgramModel, AGrowingJobsOomIsReproducedAtItsOwnEntry) {
  // grow_cap3g: PyTorch raised OutOfMemoryError at entry 8,945 with 3 GiB for its allocator.
  RunResult run = exec_oom("grow_cap3g_native.pickle", 0);
  const std::uint64_t outside = outside_said(run);
  run.budget_bytes = 3_GiB + outside;  // the card that leaves its allocator those 3 GiB
  model_program(run, {});
  ASSERT_EQ(run.models.size(), 1U) << fmt::format("{}", fmt::join(run.notes, "; "));
  const ProgramModel& m = run.models.front();
  EXPECT_EQ(m.outside_allocator_bytes, outside);
  EXPECT_GT(outside, 700_MiB) << "the CUDA context alone is ~0.6 GiB";
  EXPECT_LT(outside, 800_MiB);
  EXPECT_EQ(m.budget_bytes, 3_GiB);
  ASSERT_TRUE(m.program_entry);
  EXPECT_EQ(*m.program_entry, 8945U);
  ASSERT_TRUE(m.reproduced_entry);
  EXPECT_EQ(*m.reproduced_entry, 8945U);
  EXPECT_TRUE(m.reproduced());
  EXPECT_EQ(m.reproduction, "reproduced: the model fails at entry 8,945, where PyTorch did");
  EXPECT_TRUE(m.lower_bound) << "the snapshot was dumped at the OOM";
  ASSERT_FALSE(m.caveats.empty());
  EXPECT_NE(m.caveats.back().find("lower bound"), std::string::npos);
  std::vector<std::string> settings;
  for (const ModelRow& row : m.whatif) {
    settings.push_back(row.setting);
    ASSERT_TRUE(row.model_frontier_bytes) << row.setting;
    EXPECT_EQ(*row.frontier_bytes, *row.model_frontier_bytes + outside) << row.setting;
    // A frontier read from a trace that stops at the OOM lies above the budget it failed in.
    EXPECT_GT(*row.model_frontier_bytes, 3_GiB) << row.setting;
    EXPECT_FALSE(row.completes_at_budget) << row.setting;
  }
  EXPECT_EQ(settings,
            (std::vector<std::string>{
                "native", "expandable_segments", "max_split_size=128MiB", "max_split_size=512MiB",
                "garbage_collection_threshold=0.8 (fraction cap)", "backend=async"}));
  ASSERT_NE(as_ran_row(m), nullptr);
  EXPECT_EQ(as_ran_row(m)->setting, "native");
  EXPECT_FALSE(m.advised);
  EXPECT_TRUE(m.advice.starts_with("no setting of PyTorch's allocator completes")) << m.advice;
  EXPECT_EQ(run.oom->diagnosis.advice, m.advice) << "the record's advice is the model's";
}

TEST(ProgramModel, TheAdviceNamesOnlySettingsWhoseRowsComplete) {
  // grow_cap2g failed by fragmentation at 2 GiB; with 2.10 GiB for its allocator the model shows
  // expandable segments (2.03 GiB), max_split_size 128 MiB and the async backend completing, and
  // PyTorch's defaults (2.15 GiB) and max_split_size 512 MiB failing.
  RunResult run = exec_oom("grow_cap2g_native.pickle", 0);
  const std::uint64_t outside = outside_said(run);
  run.budget_bytes = 2150_MiB + outside;
  model_program(run, {});
  ASSERT_EQ(run.models.size(), 1U);
  const ProgramModel& m = run.models.front();
  ASSERT_TRUE(m.advised);
  const ModelRow& named = m.whatif[*m.advised];
  EXPECT_TRUE(named.completes_at_budget);
  EXPECT_FALSE(named.as_ran);
  EXPECT_TRUE(m.advice.starts_with(
      "the model says " + named.settings +
      " completes at this budget: set PYTORCH_CUDA_ALLOC_CONF=" + named.settings))
      << m.advice;
  std::size_t completing = 0;
  for (const ModelRow& row : m.whatif) {
    if (row.settings.empty()) continue;
    const bool named_in_advice = m.advice.find(row.settings) != std::string::npos;
    if (!row.completes_at_budget || row.fraction_cap) {
      EXPECT_FALSE(named_in_advice) << row.setting << " does not complete: " << m.advice;
    } else {
      EXPECT_TRUE(named_in_advice) << row.setting;
      ++completing;
    }
  }
  EXPECT_GE(completing, 2U);
  ASSERT_NE(as_ran_row(m), nullptr);
  EXPECT_FALSE(as_ran_row(m)->completes_at_budget) << "PyTorch's defaults need 2.15 GiB";
  EXPECT_FALSE(m.notes.empty()) << "its own OOM was a fraction cap: said";
}

TEST(ProgramModel, TheSnapshotsPeakReservedIsPyTorchsOwn) {
  // max_memory_reserved() as PyTorch counted it, against the segments the snapshot recorded.
  for (const char* name : {"train_fixed_native.pickle", "grow_native.pickle"}) {
    const trace::Trace t = trace::load(kJobs / name, {.device = 0});
    EXPECT_EQ(trace::recorded_peak_reserved(t),
              capture_of(name).at("reserved_peak").get<std::uint64_t>())
        << name;
  }
}

TEST(ProgramModel, ACompletedRunPredictsTheWholeProcessFrontierExecMeasured) {
  // train_fixed on the H100 (docs/exec.md, 'Measured on an H100'): NVML's peak was 742 MiB above
  // PyTorch's max_memory_reserved, and `frontier exec` measured 2,921,332,736 B for the whole
  // process.
  const json capture = capture_of("train_fixed_native.pickle");
  RunResult run;
  run.scenario = "exec";
  run.budget_bytes = 8_GiB;
  run.outcome = Outcome::completed;
  run.program = ProgramRun{.peak_bytes = capture.at("reserved_peak").get<std::uint64_t>() + 742_MiB,
                           .usage_source = "nvml-processes",
                           .snapshots = {kJobs / "train_fixed_native.pickle"}};
  model_program(run, {});
  ASSERT_EQ(run.models.size(), 1U);
  const ProgramModel& m = run.models.front();
  EXPECT_EQ(m.outside_allocator_bytes, 742_MiB);
  EXPECT_FALSE(m.program_entry);
  EXPECT_FALSE(m.reproduced_entry);
  EXPECT_EQ(m.reproduction, "reproduced: the model completes at this budget, as the program did");
  EXPECT_TRUE(m.advice.empty()) << "nothing to fix";
  EXPECT_FALSE(m.lower_bound);
  const std::optional<std::uint64_t> predicted = predicted_frontier(run.models);
  ASSERT_TRUE(predicted);
  const std::int64_t off =
      static_cast<std::int64_t>(*predicted) - static_cast<std::int64_t>(2'921'332'736ULL);
  EXPECT_LE(std::abs(off), static_cast<std::int64_t>(2_MiB)) << *predicted;
}

TEST(ProgramModel, ASnapshotThatCannotBeReadIsANoteNotAFailure) {
  const fs::path bad = fs::temp_directory_path() / "oomlab_program_model_bad.pickle";
  std::ofstream(bad) << "not a pickle";
  RunResult run;
  run.outcome = Outcome::completed;
  run.budget_bytes = 8_GiB;
  run.program = ProgramRun{.snapshots = {bad}};
  model_program(run, {});
  EXPECT_TRUE(run.models.empty());
  ASSERT_EQ(run.program->model_notes.size(), 1U);
  EXPECT_NE(run.program->model_notes.front().find(bad.string()), std::string::npos)
      << run.program->model_notes.front();
  fs::remove(bad);
}

}  // namespace
}  // namespace oomlab
