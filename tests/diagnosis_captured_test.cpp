// Issue 33 on runs of real programs, captured on an H100 (tests/data/captured): an OOM of cuBLAS
// beside PyTorch's allocator, a fragmentation OOM of a diffusers pipeline with Python stacks,
// cuDNN's refused workspaces a ResNet-50 survived, each read back as exec wrote it and modelled
// again with today's code.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "exec/oom_message.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "pytorch/exec/program_model.hpp"
#include "reports/run/program_summary.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/summary_json.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;

fs::path captured(const std::string& run) {
  return fs::path(testing::test_data_dir()) / "captured" / run;
}

// The run as exec wrote it, its model and OOM place cleared for today's code to fill again.
RunResult captured_run(const std::string& run) {
  const fs::path folder = captured(run);
  const nlohmann::json doc = nlohmann::json::parse(testing::read_text(folder / "summary.json"));
  RunResult r = read_summary(JsonFields(doc, "summary.json"), folder);
  r.models.clear();
  if (r.oom) {
    r.oom->frames.clear();
    r.oom->holders.clear();
  }
  return r;
}

// The program's output through exec's scanner, as exec fed it.
OomScanner scanned(const std::string& run) {
  OomScanner scanner;
  std::ifstream in(captured(run) / "stderr.txt");
  for (std::string line; std::getline(in, line);)
    scanner.feed_line(line);
  return scanner;
}

std::string all_notes(const RunResult& r) {
  return fmt::format("{}", fmt::join(r.notes, "; "));
}

TEST(CapturedDiagnosis, AnOomInCublasIsNamedAsTheLibrarysAndNeverAsTheProgramCompleting) {
  RunResult run = captured_run("gpt2_b7_12GiB");
  ASSERT_EQ(run.outcome, Outcome::oom);
  model_program(run, {});
  ASSERT_EQ(run.models.size(), 1U) << all_notes(run);
  const ProgramModel& m = run.models.front();
  ASSERT_TRUE(m.library_oom) << m.reproduction;
  EXPECT_EQ(m.library_oom->library, "cuBLAS");
  // PyTorch's allocator held the budget, less the CUDA context: 7.05 GiB of blocks in use and
  // the rest cached, which cuBLAS's own cudaMalloc could not have.
  const std::uint64_t reserved = m.library_oom->allocated_bytes + m.library_oom->cached_free_bytes;
  EXPECT_GT(m.library_oom->allocated_bytes, 7_GiB);
  EXPECT_GT(reserved, 11_GiB);
  EXPECT_LT(reserved, 12_GiB);
  EXPECT_FALSE(m.reproduced());
  EXPECT_EQ(m.reproduction.find("as the program did"), std::string::npos) << m.reproduction;
  EXPECT_NE(m.reproduction.find("died in cuBLAS beside it"), std::string::npos) << m.reproduction;
  EXPECT_TRUE(m.lower_bound) << "the trace stops where the program died";
  ASSERT_FALSE(m.caveats.empty());
  EXPECT_NE(m.caveats.front().find("cuBLAS"), std::string::npos);
  EXPECT_NE(m.caveats.front().find("lower bound"), std::string::npos);
  EXPECT_NE(m.advice.find("leave cuBLAS room"), std::string::npos) << m.advice;
  ASSERT_TRUE(m.advised) << "--check-remedy has a setting to try first";
  EXPECT_EQ(m.whatif[*m.advised].settings, "expandable_segments:True");
  EXPECT_NE(run.oom->diagnosis.evidence.find("cuBLAS could not get device memory"),
            std::string::npos)
      << run.oom->diagnosis.evidence;
  EXPECT_EQ(run.oom->diagnosis.advice, m.advice);
  const std::string summary = program_summary(run, "");
  EXPECT_EQ(summary.find("as the program did"), std::string::npos) << summary;
  EXPECT_NE(summary.find("≥ "), std::string::npos) << "cards read from it are lower bounds";
}

TEST(CapturedDiagnosis, TheProgramsTracebackNamesTheUsersLineWhenNoStacksWereRecorded) {
  const OomScanner scanner = scanned("gpt2_b7_12GiB");
  ASSERT_TRUE(scanner.found());
  EXPECT_EQ(scanner.found()->framework, "cuBLAS");
  const std::vector<TracebackFrame>& tb = scanner.found()->traceback;
  ASSERT_GE(tb.size(), 3U);
  // Innermost first: the autograd engine, then torch, then the user's line.
  EXPECT_NE(tb.front().frame.find("_engine_run_backward"), std::string::npos) << tb.front().frame;
  const auto user = std::find_if(
      tb.begin(), tb.end(), [](const TracebackFrame& f) { return trace::user_frame(f.frame); });
  ASSERT_NE(user, tb.end());
  EXPECT_TRUE(user->frame.starts_with("main (")) << user->frame;
  EXPECT_TRUE(user->frame.ends_with("gpt2_train.py:33)")) << user->frame;
  EXPECT_EQ(user->code, "loss.backward()");
}

TEST(CapturedDiagnosis, FreeMemoryThatAddsUpToTheRequestButNotInOnePieceIsFragmentation) {
  // The VAE decode asked 1.75 GiB with 1.52 GiB free on the device and 952.93 MiB cached-free:
  // expandable segments completed in the rerun.
  const OomScanner scanner = scanned("sd_b14_8GiB");
  ASSERT_TRUE(scanner.found());
  const ProgramOomDiagnosis d = diagnose_program_oom(*scanner.found());
  EXPECT_EQ(d.cause, Cause::fragmentation) << d.evidence;
  EXPECT_EQ(d.evidence,
            "952.93 MiB reserved by PyTorch but unallocated + 1.52 GiB free on the device = "
            "2.45 GiB >= 1.75 GiB requested, but in no one piece");
  EXPECT_NE(d.advice.find("expandable_segments:True"), std::string::npos);
}

TEST(CapturedDiagnosis, TheFailingLineAndWhatFilledMemoryComeFromTheSnapshotsStacks) {
  RunResult run = captured_run("sd_b14_8GiB");
  model_program(run, {});
  ASSERT_FALSE(run.models.empty()) << all_notes(run);
  const OomRecord& oom = *run.oom;
  EXPECT_EQ(oom.frames_from, "snapshot");
  ASSERT_FALSE(oom.frames.empty());
  EXPECT_NE(oom.frames.front().find("_conv_forward"), std::string::npos) << oom.frames.front();
  // diffusers ran from a PYTHONPATH folder (/tmp/site), outside any site-packages: the user's
  // frame is the one under the program's own folder, not the first outside an installed package.
  EXPECT_TRUE(oom.user_frame.starts_with("generate (")) << oom.user_frame;
  EXPECT_NE(oom.user_frame.find("sd_pipeline.py:"), std::string::npos) << oom.user_frame;
  EXPECT_NE(std::find(oom.frames.begin(), oom.frames.end(), oom.user_frame), oom.frames.end());
  ASSERT_FALSE(oom.holders.empty());
  EXPECT_LE(oom.holders.size(), 10U);
  EXPECT_TRUE(std::is_sorted(oom.holders.begin(), oom.holders.end(),
                             [](const auto& a, const auto& b) { return a.bytes > b.bytes; }));
  std::uint64_t held = 0;
  for (const trace::MemoryHolder& h : oom.holders) {
    held += h.bytes;
    EXPECT_EQ(h.where.find("torch/nn/modules"), std::string::npos)
        << "a holder is the frame that called PyTorch, not PyTorch's own: " << h.where;
  }
  // PyTorch's message: 4.87 GiB allocated; the ten largest groups hold most of it.
  EXPECT_LE(held, 4.88 * 1_GiB);
  EXPECT_GT(held, 2_GiB);
  const std::string summary = program_summary(run, "");
  EXPECT_NE(summary.find("where      generate (sd_pipeline.py:"), std::string::npos) << summary;
  EXPECT_NE(summary.find(", then wrapper (diffusers/utils/accelerate_utils.py:49) → decode ("),
            std::string::npos)
      << "the library frames below the user's line: " << summary;
  EXPECT_NE(summary.find("held by"), std::string::npos) << summary;
}

// The snapshot read alone, with no command line to say where the script is: its own stacks do
// (the entry script's folder), so the replay names the user's line exec named, diffusers on
// PYTHONPATH (/tmp/site) notwithstanding, and groups what filled memory as exec did.
TEST(CapturedDiagnosis, AReplayOfTheSnapshotAloneNamesTheUsersLineExecNamed) {
  RunResult run = captured_run("sd_b14_8GiB");
  model_program(run, {});
  ASSERT_FALSE(run.models.empty()) << all_notes(run);
  const OomRecord& exec_said = *run.oom;
  ASSERT_FALSE(exec_said.user_frame.empty());
  const fs::path snapshot = captured("sd_b14_8GiB") / "snapshot-pid1153.pickle";
  const std::vector<std::string> replay = {"oomlab",
                                           "run",
                                           "replay",
                                           "--trace",
                                           snapshot.string(),
                                           "-a",
                                           "torch",
                                           "--budget",
                                           std::to_string(run.models.front().budget_bytes),
                                           "--no-probe",
                                           "--no-out"};
  std::vector<std::string> as_json = replay;
  as_json.insert(as_json.end(), {"--json", "-"});
  const testing::CliRun out = testing::run_in_process(as_json);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json oom = nlohmann::json::parse(out.out).at("oom");
  EXPECT_EQ(oom.at("user_frame"), exec_said.user_frame) << oom.at("frames").dump(2);
  ASSERT_EQ(oom.at("holders").size(), exec_said.holders.size());
  for (std::size_t i = 0; i < exec_said.holders.size(); ++i) {
    EXPECT_EQ(oom.at("holders").at(i).at("where"), exec_said.holders[i].where) << i;
    EXPECT_EQ(oom.at("holders").at(i).at("bytes"), exec_said.holders[i].bytes) << i;
  }
  const testing::CliRun text = testing::run_in_process(replay);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("where      generate (sd_pipeline.py:"), std::string::npos) << text.out;
}

TEST(CapturedDiagnosis, RefusalsTheProgramSurvivedAreNotItsOom) {
  // cuDNN's workspaces refused at entries 3,491 and 3,507, the program going on; the OOM that
  // ended it at entry 3,515.
  const fs::path snapshot = captured("resnet_b64_6450MiB") / "snapshot-pid3277.pickle";
  const trace::Trace t = trace::load(snapshot, {});
  EXPECT_EQ(t.demand.failures, 3U);
  EXPECT_EQ(trace::survived_failure_sizes(t).size(), 2U);
  ASSERT_NE(trace::fatal_failure_at(t), trace::Event::kNone);
  EXPECT_EQ(t.events[trace::fatal_failure_at(t)].index, 3515U);
  const std::vector<std::string> caveats = trace::trace_caveats(t);
  EXPECT_TRUE(std::any_of(caveats.begin(), caveats.end(), [](const std::string& c) {
    return c.find("survived 2 refused requests") != std::string::npos &&
           c.find("upper bound") != std::string::npos;
  })) << fmt::format("{}", fmt::join(caveats, "\n"));

  // Replayed at the budget the program had, the refusals it survived are refused again and the
  // replay goes on: the run's OOM is the one that ended the program.
  const std::optional<std::uint64_t> budget = trace::recorded_device_budget(t);
  ASSERT_TRUE(budget);
  const testing::CliRun out = testing::run_in_process(
      {"oomlab", "run", "replay", "--trace", snapshot.string(), "-a", "torch", "--budget",
       std::to_string(*budget), "--no-probe", "--no-out", "--json", "-"});
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json result = nlohmann::json::parse(out.out);
  ASSERT_TRUE(result.at("oom").is_object()) << out.out;
  EXPECT_EQ(result.at("oom").at("trace_entry"), 3515);
  EXPECT_EQ(result.at("metrics").at("trace_survived_refusals"), 2);
}

// The program filled PyTorch's cache, catching each refusal, then died in cuBLAS: its snapshot
// ends with a refusal it survived. The OOM is cuBLAS's, beside the allocator, and every answer
// read from the snapshot is a lower bound; the refusal is never called PyTorch's failure.
TEST(CapturedDiagnosis, AnOomInCublasAfterARefusalTheProgramCaughtIsCublass) {
  RunResult run = captured_run("cublas_caught_4GiB");
  ASSERT_EQ(run.outcome, Outcome::oom);
  ASSERT_TRUE(run.oom && run.oom->program);
  // An older record has no `library`: the output says it, as exec reads it today.
  run.oom->program->library = scanned("cublas_caught_4GiB").found()->library;
  ASSERT_TRUE(run.oom->program->library);
  model_program(run, {});
  ASSERT_EQ(run.models.size(), 1U) << all_notes(run);
  const ProgramModel& m = run.models.front();
  ASSERT_TRUE(m.library_oom) << m.reproduction;
  EXPECT_EQ(m.library_oom->library, "cuBLAS");
  EXPECT_FALSE(m.program_entry) << "the refusal at the trace's end was caught";
  EXPECT_EQ(m.reproduction.find("PyTorch failed"), std::string::npos) << m.reproduction;
  EXPECT_NE(m.reproduction.find("died in cuBLAS beside it"), std::string::npos) << m.reproduction;
  EXPECT_TRUE(m.lower_bound);
  for (const std::string& caveat : m.caveats)
    EXPECT_EQ(caveat.find("stops at the program's OOM"), std::string::npos) << caveat;
}

TEST(SurvivedRefusals, AReplayThatOnlyRefusesWhatTheProgramSurvivedCompletes) {
  // 6 MiB live, 4 MiB refused (the program asked for less and went on), 1 MiB more: at an 8 MiB
  // budget the 4 MiB are refused again, and the program, as it did, completes.
  const fs::path folder = testing::fresh_temp_folder("survived");
  std::ofstream(folder / "trace.csv")
      << "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes\n"
         "0,1000,0,run,alloc,6291456,0x100000000000,0x0,0,ok,6291456,6291456\n"
         "1,2000,0,run,oom,4194304,0x0,0x0,0,out_of_memory,6291456,6291456\n"
         "2,3000,0,run,alloc,1048576,0x100000600000,0x0,0,ok,7340032,8388608\n"
         "3,4000,0,run,free,1048576,0x100000600000,0x0,0,ok,6291456,8388608\n"
         "4,5000,0,run,free,6291456,0x100000000000,0x0,0,ok,0,8388608\n";
  const testing::CliRun out = testing::run_in_process(
      {"oomlab", "run", "replay", "--trace", (folder / "trace.csv").string(), "-a", "sim",
       "--budget", "8MiB", "--no-out", "--json", "-"});
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json result = nlohmann::json::parse(out.out);
  EXPECT_EQ(result.at("outcome"), "completed") << out.out;
  EXPECT_EQ(result.at("metrics").at("trace_survived_refusals"), 1);
  EXPECT_EQ(result.at("metrics").at("survived_refused_again"), 1);
}

}  // namespace
}  // namespace oomlab
