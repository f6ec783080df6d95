// Every verdict right wherever it is read (issue 44): a snapshot read alone knows what its run
// record says of its program, or says that its history ends mid-step; budgets are modelled as
// given; flags act or are refused; the words say what happened.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/search_output.hpp"
#include "exec/oom_message.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/trace_builder.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::oomlab::testing::CliRun;

CliRun cli(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

// The GPT-2 run that died in cuBLAS under 12 GiB (tests/data/captured/gpt2_b7_12GiB): its folder
// copied whole, and its snapshot copied alone into another folder.
struct Cublas {
  fs::path folder;
  fs::path snapshot;
  fs::path alone;
};

Cublas cublas_run() {
  const fs::path root = ::oomlab::testing::fresh_temp_folder("oomlab_verdicts_cublas");
  Cublas c{.folder = root / "run", .alone = root / "alone" / "snapshot-pid741.pickle"};
  fs::copy(fs::path(::oomlab::testing::test_data_dir()) / "captured" / "gpt2_b7_12GiB", c.folder);
  c.snapshot = c.folder / "snapshot-pid741.pickle";
  fs::create_directories(c.alone.parent_path());
  fs::copy_file(c.snapshot, c.alone);
  return c;
}

TEST(Verdicts, ASnapshotInItsRunFolderIsALowerBoundWhereItsProgramDiedBesideTheAllocator) {
  const Cublas c = cublas_run();
  const CliRun whatif =
      cli({"whatif", "--trace", c.snapshot.string(), "--budget", "12GiB", "--json", "-"});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const json doc = json::parse(whatif.out);
  EXPECT_TRUE(doc.at("lower_bound").get<bool>());
  EXPECT_NE(doc.at("answer").get<std::string>().find("died in cuBLAS"), std::string::npos)
      << doc.at("answer");
  EXPECT_NE(doc.at("notes").dump().find("the run record beside the snapshot"), std::string::npos);

  const CliRun frontier =
      cli({"frontier", "replay", "--trace", c.snapshot.string(), "-a", "torch", "--json", "-"});
  ASSERT_EQ(frontier.code, 0) << frontier.err;
  const json f = json::parse(frontier.out);
  EXPECT_TRUE(f.at("lower_bound").get<bool>());
  EXPECT_NE(f.at("answer").get<std::string>().find("a lower bound for the whole job: the "
                                                   "snapshot stops where the program died in "
                                                   "cuBLAS"),
            std::string::npos)
      << f.at("answer");

  const CliRun run = cli({"run", "replay", "--trace", c.snapshot.string(), "-a", "torch",
                          "--budget", "12GiB", "--no-out"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("ran out of memory in cuBLAS"), std::string::npos) << run.err;
}

TEST(Verdicts, ASnapshotReadAloneSaysItsHistoryEndsMidStep) {
  const Cublas c = cublas_run();
  const CliRun whatif =
      cli({"whatif", "--trace", c.alone.string(), "--budget", "12GiB", "--json", "-"});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const json doc = json::parse(whatif.out);
  EXPECT_FALSE(doc.at("lower_bound").get<bool>()) << "the history alone cannot know";
  EXPECT_NE(doc.at("notes").dump().find("it stops mid-step"), std::string::npos) << doc.at("notes");
}

TEST(Verdicts, ACompletedProgramsSnapshotSaysNothingOfAMidStep) {
  for (const char* name : {"train_fixed_native.pickle", "grow_native.pickle"}) {
    const fs::path job = fs::path(::oomlab::testing::test_data_dir()) / "pytorch" / name;
    const trace::Trace t = trace::load(job, {});
    for (const std::string& caveat : trace::trace_caveats(t))
      EXPECT_EQ(caveat.find("mid-step"), std::string::npos) << name << ": " << caveat;
    EXPECT_FALSE(trace::stops_short(t)) << name;
  }
}

TEST(Verdicts, ACudnnAttentionFrameIsNoConvolution) {
  // One allocation under cuDNN's attention, one under a convolution: only the second is one.
  trace::TraceBuilder b(trace::Format::oomlab, "attention.csv");
  b.add(trace::Op::alloc, 4096, 0x1000, 0, 0, 0, 0, 0);
  b.add(trace::Op::alloc, 4096, 0x2000, 0, 0, 0, 1, 0);
  b.add(trace::Op::free, 4096, 0x1000, 0, 0, 0, 2, 0);
  b.add(trace::Op::free, 4096, 0x2000, 0, 0, 0, 3, 0);
  trace::Trace t = b.finish();
  t.recorded.emplace();
  t.recorded->stacks = {{"at::native::_cudnn_attention_forward (??:0)",
                         "scaled_dot_product_attention (torch/nn/functional.py:6102)"},
                        {"_conv_forward (torch/nn/modules/conv.py:548)", "forward (model.py:12)"}};
  t.recorded->event_stacks = {0, 0, 0, 0};
  const auto words = [&] { return ::testing::PrintToString(trace::trace_caveats(t)); };
  EXPECT_EQ(words().find("inside convolutions"), std::string::npos) << words();
  t.recorded->event_stacks = {0, 1, 0, 1};
  EXPECT_NE(words().find("1 allocations were made inside convolutions"), std::string::npos)
      << words();
}

TEST(Verdicts, ACublasOomInASearchsTableIsCublassNotACapacityOfTheAllocator) {
  const std::optional<ProgramOom> oom = recognise_oom_line(
      "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`");
  ASSERT_TRUE(oom);
  EXPECT_TRUE(oom->library);
  EXPECT_FALSE(recognise_oom_line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                  "20.00 MiB. GPU 0 has a total capacity of 79.18 GiB")
                   ->library);
  const Trial trial{
      .value = 7, .outcome = Outcome::oom, .cause = Cause::capacity, .library = oom->framework};
  const std::string line = cli::value_trial_line("batch", trial);
  EXPECT_NE(line.find("oom (in cuBLAS)"), std::string::npos) << line;
  EXPECT_EQ(line.find("capacity"), std::string::npos) << line;
}

TEST(Verdicts, FlagsThatWouldBeIgnoredAreRefused) {
  const auto refused = [](std::vector<std::string> args, const std::string& words) {
    const CliRun r = cli(std::move(args));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
  };
  refused({"fit", "leak", "-a", "sim", "--range", "steps=1..4", "--outside", "1GiB"},
          "--outside needs --from");
  refused({"fit", "replay", "--trace", "x_b{batch}.pickle", "--from", "batch=1,2", "--range",
           "batch=1..8", "--cards", "L4", "--budget", "12GiB"},
          "--budget and --cards: give one");
}

TEST(Verdicts, FitSaysWhichBudgetItAnswersForWhenNoneWasGiven) {
  const CliRun r =
      cli({"fit", "leak", "-a", "sim", "-p", "leak=256MiB", "--range", "steps=1..64", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--budget not given: the answer is for the default 8.00 GiB"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace oomlab
