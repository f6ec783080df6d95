// `exec --check-remedy` on stand-in devices: a stand-in program prints PyTorch's real message of
// the grow job (captures.jsonl) and fails unless PYTORCH_CUDA_ALLOC_CONF holds a given value; its
// snapshot is the job's real one. The model names a setting, the program runs again at the same
// budget with exactly that setting's string, and the record says whether the claim held.
#include "pytorch/exec/remedy_check.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/oom_message.hpp"
#include "fake_exec_devices.hpp"
#include "oomlab/units.hpp"
#include "pytorch/exec/program_model.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::FakeDevices;

const fs::path kJobs = fs::path(testing::test_data_dir()) / "pytorch";

// PyTorch's message when grow ran out under its 2 GiB cap (captures.jsonl).
std::string grow_cap2g_message() {
  std::ifstream in(kJobs / "captures.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json c = nlohmann::json::parse(line);
    if (c.at("out").get<std::string>().ends_with("grow_cap2g_native.pickle"))
      return "torch.OutOfMemoryError: " + c.at("message").get<std::string>();
  }
  throw std::runtime_error("no grow_cap2g capture");
}

class RemedyCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-remedy-check-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    devices_ = std::make_unique<FakeDevices>(dir_ / "usage");
    message_ = grow_cap2g_message();
    std::ofstream(dir_ / "message") << message_ << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The stand-in completes only when PYTORCH_CUDA_ALLOC_CONF is `completes_with`; it writes what
  // it was given to seen.txt. The budget leaves the model 2,150 MiB once the memory the message
  // puts outside PyTorch's allocator is taken off: expandable segments complete there (2.03 GiB
  // in the model), PyTorch's defaults (2.15 GiB) do not.
  ExecConfig config(const std::string& completes_with) {
    const auto said = recognise_oom_line(message_);
    const std::uint64_t outside = *said->process_used_bytes - *said->framework_allocated_bytes -
                                  *said->framework_cached_free_bytes;
    ExecConfig c;
    const std::string seen = (dir_ / "seen.txt").string();
    c.command = {"/bin/sh", "-c",
                 "echo \"${PYTORCH_CUDA_ALLOC_CONF-unset}\" >> " + seen +
                     "; if [ \"$PYTORCH_CUDA_ALLOC_CONF\" = '" + completes_with +
                     "' ]; then exit 0; fi; cat " + (dir_ / "message").string() + " >&2; exit 1"};
    c.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{2150_MiB + outside}};
    c.interval = 2ms;
    c.folder = dir_ / "run";
    c.out_fd = -1;
    c.err_fd = -1;
    c.environment = Environment{};
    return c;
  }

  // The first run, then what run_exec leaves once the exec shim has written the job's snapshot.
  RunResult first_run(const ExecConfig& c) {
    RunResult r = run_exec(c, *devices_);
    EXPECT_EQ(r.outcome, Outcome::oom);
    r.program->snapshots = {kJobs / "grow_cap2g_native.pickle"};
    model_program(r, {});
    return r;
  }

  std::vector<std::string> seen() const {
    std::ifstream in(dir_ / "seen.txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }

  std::vector<ExecDevices*> gpus() { return {devices_.get()}; }

  // A cuBLAS OOM as the model leaves it: expandable segments advised first, then the cap.
  RunResult library_oom_run(const ExecConfig& c) {
    RunResult r = run_exec(c, *devices_);
    ProgramModel m{.library_oom = LibraryOom{.library = "cuBLAS"}, .budget_bytes = 2_GiB};
    ModelRow row;
    row.setting = "expandable_segments";
    row.settings = "expandable_segments:True";
    m.whatif.push_back(row);
    m.advised = 0;
    r.models = {m};
    return r;
  }

  fs::path dir_;
  std::unique_ptr<FakeDevices> devices_;
  std::string message_;
};

TEST_F(RemedyCheck, ALibrarysTwoRemediesGoAtOnceOnTwoGpusAndEndAsOneAfterTheOther) {
  // The stand-in completes only under the cap; it sleeps so that two at once overlap.
  ExecConfig c = config("never");
  const std::string d = dir_.string();
  c.command = {"/bin/sh", "-c",
               "touch " + d + "/running.$$; ls " + d + "/running.* | wc -l >> " + d +
                   "/most; sleep 0.3; rm -f " + d +
                   "/running.$$; [ -n \"$OOMLAB_ALLOCATOR_CAP_BYTES\" ] "
                   "&& exit 0; cat " +
                   (dir_ / "message").string() + " >&2; exit 1"};
  RunResult one = library_oom_run(c);
  EXPECT_EQ(check_remedy(c, gpus(), one), "");
  fs::remove(dir_ / "most");
  fs::remove_all(dir_ / "run" / "remedy_check");
  auto second = std::make_unique<FakeDevices>(dir_ / "usage2", 1, "GPU-fake-1");
  const std::vector<ExecDevices*> two = {devices_.get(), second.get()};
  RunResult both = library_oom_run(c);
  EXPECT_EQ(check_remedy(c, two, both), "");
  for (const RunResult* r : {&one, &both}) {
    const auto& check = r->models.front().remedy_check;
    ASSERT_TRUE(check);
    EXPECT_EQ(check->setting, "allocator cap");
    EXPECT_TRUE(check->held);
    ASSERT_EQ(r->models.front().notes.size(), 1U);
    EXPECT_NE(r->models.front().notes.front().find("--check-remedy tried first"),
              std::string::npos);
  }
  std::ifstream in(dir_ / "most");
  int most = 0;
  for (int n = 0; in >> n;)
    most = std::max(most, n);
  EXPECT_EQ(most, 2) << "the two reruns at once";
  EXPECT_GT(second->holds, 0) << "the second GPU ran one under its own ballast";
  EXPECT_EQ(second->ballast, 0U);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "remedy_check")) << "the remedy's files, as one GPU";
  EXPECT_FALSE(fs::exists(dir_ / "run" / "remedy_check_cap"));
}

TEST_F(RemedyCheck, TheSettingTheModelNamesIsRunAgainAndItsClaimHolds) {
  const ExecConfig c = config("expandable_segments:True");
  RunResult r = first_run(c);
  ASSERT_FALSE(r.models.empty());
  ASSERT_TRUE(r.models.front().advised);
  EXPECT_EQ(check_remedy(c, gpus(), r), "");
  const auto& check = r.models.front().remedy_check;
  ASSERT_TRUE(check);
  EXPECT_EQ(check->setting, "expandable_segments");
  EXPECT_EQ(check->settings, "expandable_segments:True");
  EXPECT_EQ(check->outcome, Outcome::completed);
  EXPECT_TRUE(check->held);
  EXPECT_EQ(seen(), (std::vector<std::string>{"unset", "expandable_segments:True"}));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "remedy_check" / "stderr.txt"));
  EXPECT_EQ(devices_->holds, 2) << "the same budget, a ballast again";
  EXPECT_NE(remedy_check_line(*check).find("the model's claim held"), std::string::npos);
}

TEST_F(RemedyCheck, AClaimThatDoesNotHoldIsRecordedAsAFinding) {
  const ExecConfig c = config("something_else");
  RunResult r = first_run(c);
  EXPECT_EQ(check_remedy(c, gpus(), r), "");
  const auto& check = r.models.front().remedy_check;
  ASSERT_TRUE(check);
  EXPECT_EQ(check->outcome, Outcome::oom);
  EXPECT_FALSE(check->held);
  EXPECT_TRUE(
      check->line.starts_with("torch.OutOfMemoryError: CUDA out of memory. Tried to "
                              "allocate 256.00 MiB."))
      << check->line;
  EXPECT_NE(remedy_check_line(*check).find("the model's claim did not hold"), std::string::npos);
}

TEST_F(RemedyCheck, TheProgramsOwnSettingIsReplacedWholeAndSaidSo) {
  ExecConfig c = config("expandable_segments:True");
  c.variables = {{kAllocConfVariable, "max_split_size_mb:512"}};
  RunResult r = first_run(c);
  EXPECT_EQ(check_remedy(c, gpus(), r), "");
  const auto& check = r.models.front().remedy_check;
  ASSERT_TRUE(check);
  EXPECT_EQ(check->replaced, "max_split_size_mb:512");
  EXPECT_TRUE(check->held);
  EXPECT_EQ(seen(),
            (std::vector<std::string>{"max_split_size_mb:512", "expandable_segments:True"}));
  EXPECT_NE(remedy_check_line(*check).find("replacing the program's 'max_split_size_mb:512'"),
            std::string::npos);
}

TEST_F(RemedyCheck, NothingIsRunWhenTheModelNamesNoSetting) {
  const ExecConfig c = config("expandable_segments:True");
  RunResult r = run_exec(c, *devices_);
  EXPECT_EQ(check_remedy(c, gpus(), r), "the program left no snapshot for the model");
  r.outcome = Outcome::completed;
  EXPECT_EQ(check_remedy(c, gpus(), r), "the program did not run out of memory");
  EXPECT_EQ(devices_->holds, 1);
  EXPECT_EQ(seen().size(), 1U);
}

}  // namespace
}  // namespace oomlab
