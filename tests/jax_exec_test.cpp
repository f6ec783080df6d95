// exec on JAX programs, on stand-in devices (80 GiB each): the budget is a card for XLA's pool
// (JAX sizes it from the device's total memory, so its fraction is scaled to the budget), XLA's
// INFO log is turned on and kept apart from the output the user sees, and the BFC allocator's
// pool summary at an OOM gives the diagnosis. tests/data/exec/xla_oom_stderr.txt is the stderr of
// tests/data/exec/jax_lm.py --batch 8 on an H200 (JAX 0.11.2, XLA_PYTHON_CLIENT_MEM_FRACTION=0.045,
// TF_CPP_MIN_LOG_LEVEL=0; ptxas's register-spill lines left out).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/exec_run.hpp"
#include "exec/oom_message.hpp"
#include "fake_exec_devices.hpp"
#include "jax/exec/xla_program.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::testing::FakeDevices;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ExecJax : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-jax-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    devices_ = std::make_unique<FakeDevices>(dir_ / "usage");
    for (const char* name :
         {"XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION", "TF_CPP_MIN_LOG_LEVEL"})
      ::unsetenv(name);  // NOLINT(concurrency-mt-unsafe): the suite's own process, one thread
  }
  void TearDown() override {
    for (const char* name :
         {"XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION", "TF_CPP_MIN_LOG_LEVEL"})
      ::unsetenv(name);  // NOLINT(concurrency-mt-unsafe)
    fs::remove_all(dir_);
  }

  oomlab::RunResult run(const std::string& script, std::uint64_t budget = 2_GiB) {
    oomlab::ExecConfig config;
    config.command = {"/bin/sh", "-c", script};
    config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{budget}};
    config.interval = 2ms;
    config.folder = dir_ / "run";
    config.out_fd = -1;
    config.err_fd = -1;
    config.grace = 500ms;
    config.environment = oomlab::Environment{};
    config.snapshot.enabled = recording_;
    config.snapshot.predicting = predicting_;
    config.variables = variables_;
    return oomlab::run_exec(config, *devices_);
  }
  [[nodiscard]] std::string out() const { return read_file(dir_ / "run" / "stdout.txt"); }
  [[nodiscard]] std::string err() const { return read_file(dir_ / "run" / "stderr.txt"); }
  [[nodiscard]] std::string log() const { return read_file(dir_ / "run" / "xla-log.txt"); }

  fs::path dir_;
  std::unique_ptr<FakeDevices> devices_;
  bool recording_ = false;   // exec's snapshot shim, and XLA's allocator log with it
  bool predicting_ = false;  // a run a search predicts from
  std::vector<std::pair<std::string, std::string>> variables_;  // --check-remedy's setting
};

// The pool a fraction (the text up to its first space or newline) gives on the 80 GiB device, and
// on a device whose total JAX sees 64 KiB over it: never over the card's share, and within one of
// XLA's 2 MiB roundings under it.
void expect_the_cards_share(const std::string& text, std::uint64_t card, double share = 0.75) {
  const double fraction = std::stod(text.substr(0, text.find_first_of(" \n")));
  const double wanted = share * static_cast<double>(card);
  EXPECT_LE(fraction * static_cast<double>(80_GiB + 64_KiB), wanted) << text;
  EXPECT_GT(fraction * static_cast<double>(80_GiB), wanted - static_cast<double>(2_MiB)) << text;
}

TEST_F(ExecJax, ThePoolIsSizedAsOnACardOfTheBudget) {
  const oomlab::RunResult result =
      run("echo \"jax fraction=$XLA_PYTHON_CLIENT_MEM_FRACTION level=$TF_CPP_MIN_LOG_LEVEL\"");
  // 0.75 of a 2 GiB card is 0.01875 of the 80 GiB device, a hair under it: JAX's own total can be
  // up to 64 KiB over the runtime's, and the pool must not come out over the card's share.
  const std::string said = out();
  ASSERT_TRUE(said.starts_with("jax fraction=0.018749") && said.ends_with(" level=0\n")) << said;
  expect_the_cards_share(said.substr(said.find('=') + 1), 2_GiB);
  ASSERT_EQ(result.notes.size(), 1U);
  EXPECT_NE(result.notes.front().find("XLA_PYTHON_CLIENT_MEM_FRACTION=0.018749"), std::string::npos)
      << result.notes.front();
  EXPECT_NE(result.notes.front().find("JAX's default"), std::string::npos);
}

TEST_F(ExecJax, TheProgramsOwnFractionIsScaledNotReplaced) {
  ::setenv("XLA_CLIENT_MEM_FRACTION", "0.5", 1);  // NOLINT(concurrency-mt-unsafe)
  const oomlab::RunResult result =
      run("echo \"jax $XLA_CLIENT_MEM_FRACTION ${XLA_PYTHON_CLIENT_MEM_FRACTION:-unset}\"", 8_GiB);
  const std::string said = out();  // 0.5 x 8 / 80, a hair under
  ASSERT_TRUE(said.starts_with("jax 0.04999") && said.ends_with(" unset\n")) << said;
  expect_the_cards_share(said.substr(4), 8_GiB, 0.5);
  ASSERT_EQ(result.notes.size(), 1U);
  EXPECT_NE(result.notes.front().find("the program's XLA_CLIENT_MEM_FRACTION"), std::string::npos);
}

// --check-remedy's rerun with a larger share of the card: the share is of the card, scaled as the
// program's own would be, and the program sees that value alone (Python's os.environ keeps the
// first of two assignments of a name).
TEST_F(ExecJax, ARemedysFractionIsOfTheCardToo) {
  variables_ = {{"XLA_PYTHON_CLIENT_MEM_FRACTION", "0.90"}};
  static_cast<void>(
      run("env | grep -c '^XLA_PYTHON_CLIENT_MEM_FRACTION='; echo "
          "\"jax $XLA_PYTHON_CLIENT_MEM_FRACTION\"",
          8_GiB));
  const std::string said = out();  // 0.9 x 8 / 80, a hair under
  ASSERT_TRUE(said.starts_with("1\njax 0.08999")) << said;
  expect_the_cards_share(said.substr(6), 8_GiB, 0.9);
}

TEST_F(ExecJax, EachRequestAndFreeIsLoggedWhileExecRecordsUnlessTheUserSaidOtherwise) {
  const std::string show = "echo \"jax ${TF_CPP_VMODULE:-unset}\"";
  static_cast<void>(run(show));
  EXPECT_EQ(out(), "jax unset\n");  // --no-snapshot: nothing recorded
  recording_ = true;
  static_cast<void>(run(show));
  EXPECT_EQ(out(), "jax bfc_allocator=4\n");
  ::setenv("TF_CPP_VMODULE", "gpu_compiler=1", 1);  // NOLINT(concurrency-mt-unsafe)
  static_cast<void>(run(show));
  ::unsetenv("TF_CPP_VMODULE");  // NOLINT(concurrency-mt-unsafe)
  EXPECT_EQ(out(), "jax gpu_compiler=1\n");
}

// fit exec's first two runs: XLA compiles their step under a tight limit, after the program's
// own flags, only while exec records (their logs are what the prediction reads); every run exec
// records has XLA's dump of what it compiled beside the log.
TEST_F(ExecJax, ARunASearchPredictsFromIsCompiledUnderATightLimit) {
  const std::string show = "echo \"jax ${XLA_FLAGS:-unset}\"";
  const std::string dump = "--xla_dump_to=" + (dir_ / "run" / "xla-dump").string();
  predicting_ = true;
  static_cast<void>(run(show));
  EXPECT_EQ(out(), "jax unset\n");  // --no-snapshot: no log to predict from
  recording_ = true;
  ::setenv("XLA_FLAGS", "--xla_gpu_autotune_level=2", 1);  // NOLINT(concurrency-mt-unsafe)
  static_cast<void>(run(show));
  EXPECT_EQ(out(),
            "jax --xla_gpu_autotune_level=2 --xla_gpu_memory_limit_slop_factor=1 " + dump + "\n");
  predicting_ = false;
  static_cast<void>(run(show));
  EXPECT_EQ(out(), "jax --xla_gpu_autotune_level=2 " + dump + "\n")
      << "the other runs as the program has it, and its compiled steps dumped";
  ::setenv("XLA_FLAGS", "--xla_dump_to=/elsewhere", 1);  // NOLINT(concurrency-mt-unsafe)
  static_cast<void>(run(show));
  ::unsetenv("XLA_FLAGS");  // NOLINT(concurrency-mt-unsafe)
  EXPECT_EQ(out(), "jax --xla_dump_to=/elsewhere\n") << "the program's own dump stands";
}

TEST_F(ExecJax, NoNoteWhereNothingNamesJax) {
  const oomlab::RunResult result = run("echo torch");
  EXPECT_TRUE(result.notes.empty());
}

TEST_F(ExecJax, XlasInfoLinesGoToTheirOwnFileAndThePoolSummaryDiagnoses) {
  const std::string fixture = oomlab::testing::test_data_dir() + "/exec/xla_oom_stderr.txt";
  const oomlab::RunResult result = run("cat '" + fixture + "' >&2; exit 1");
  const std::string shown = err();
  const std::string kept = log();
  EXPECT_EQ(shown.find("I1129 "), std::string::npos) << "an INFO line reached the user";
  EXPECT_EQ(shown.find("InUse:   "), std::string::npos) << "the Stats block reached the user";
  EXPECT_NE(shown.find("ran out of memory trying to allocate 10.11GiB"), std::string::npos);
  EXPECT_NE(shown.find("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED"), std::string::npos);
  EXPECT_NE(kept.find("BFCAllocator dump for GPU_0_bfc"), std::string::npos);
  EXPECT_NE(kept.find("LargestFreeBlock:"), std::string::npos);
  // Every line of the program's stderr went to one of the two, once.
  EXPECT_EQ(shown.size() + kept.size(), fs::file_size(fixture));
  ASSERT_TRUE(result.program.has_value());
  EXPECT_NE(result.program->snapshot_note.find("the framework's own log is kept in xla-log.txt"),
            std::string::npos)
      << "no snapshot, but the run says where its allocator's record is: "
      << result.program->snapshot_note;

  ASSERT_TRUE(result.oom.has_value());
  ASSERT_TRUE(result.oom->program.has_value());
  const oomlab::ProgramMessage& message = *result.oom->program;
  EXPECT_EQ(message.framework, "JAX/XLA");
  EXPECT_NE(message.line.find("JaxRuntimeError"), std::string::npos) << message.line;
  // "pool limit 6.29GiB", "total free in pool 4.79GiB", "Sum Total of in-use chunks: 1.50GiB"
  ASSERT_TRUE(message.framework_limit_bytes.has_value());
  EXPECT_NEAR(static_cast<double>(*message.framework_limit_bytes) / 1_GiB, 6.29, 0.005);
  EXPECT_NEAR(static_cast<double>(*message.framework_cached_free_bytes) / 1_GiB, 4.79, 0.005);
  EXPECT_NEAR(static_cast<double>(*message.framework_allocated_bytes) / 1_GiB, 1.50, 0.005);
  EXPECT_EQ(result.oom->diagnosis.cause, oomlab::Cause::capacity);
  EXPECT_NE(result.oom->diagnosis.evidence.find("pool limit"), std::string::npos)
      << result.oom->diagnosis.evidence;
}

// As JAX 0.11.2 ran with XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 on a 3.42 GiB card (measured on an
// H200): the card refused the pool its limit at start (a refusal XLA survives, asking nine tenths
// of it), and the step's request failed 27 s later with the pool's limit not taken, the card full.
// The OOM's moment is the raise's, not the refusal's; and the pool could not grow into a limit
// the card did not have: capacity, not fragmentation.
TEST_F(ExecJax, APoolTheCardCouldNotGiveItsLimitIsShortOfTheCardAtTheRaisesMoment) {
  const std::string usage = (dir_ / "usage").string();
  const oomlab::RunResult result = run(
      "echo 600000000 > '" + usage +
          "'; "
          "echo 'E1129 20:24:21.897410    8584 cuda_executor.cc:1365] [0] Failed to allocate "
          "device "
          "memory of 3.08GiB (3307208704 bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: "
          "out of memory' >&2; sleep 0.3; echo 3600000000 > '" +
          usage +
          "'; sleep 0.1; "
          "echo 'W1129 20:24:48.661306    8584 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out "
          "of memory trying to allocate 1.27GiB (rounded to 1366941184) from the lower end "
          "requested by op ' >&2; "
          "echo 'I1129 20:24:48.661900    8584 bfc_allocator.cc:1475] Sum Total of in-use chunks: "
          "1.50GiB' >&2; "
          "echo 'I1129 20:24:48.661901    8584 bfc_allocator.cc:1477] Allocator memory summary: "
          "rounded request 1.27GiB, total free in pool 1.27GiB, largest free chunk usable by lower "
          "end 1.26GiB, unallocated bytes 317.44MiB, pool size 2.77GiB, pool limit 3.08GiB' >&2; "
          "echo 'jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
          "allocate 1.27GiB with allocator GPU_0_bfc on device 0.' >&2; exit 1",
      3504_MiB);
  ASSERT_TRUE(result.oom.has_value());
  EXPECT_GE(result.oom->t_ms, 300.0) << "the moment of the refusal XLA survived";
  EXPECT_NEAR(static_cast<double>(result.oom->request_bytes) / 1_GiB, 1.27, 0.005);
  EXPECT_EQ(result.oom->diagnosis.cause, oomlab::Cause::capacity) << result.oom->diagnosis.evidence;
  EXPECT_NE(result.oom->diagnosis.evidence.find("which the card does not have"), std::string::npos)
      << result.oom->diagnosis.evidence;
}

TEST_F(ExecJax, TheUsersOwnLogLevelIsLeftAlone) {
  ::setenv("TF_CPP_MIN_LOG_LEVEL", "0", 1);  // NOLINT(concurrency-mt-unsafe)
  const std::string fixture = oomlab::testing::test_data_dir() + "/exec/xla_oom_stderr.txt";
  static_cast<void>(run("cat '" + fixture + "' >&2; exit 1"));
  EXPECT_EQ(err().size(), fs::file_size(fixture));
  EXPECT_FALSE(fs::exists(dir_ / "run" / "xla-log.txt"));
}

TEST_F(ExecJax, AProgressBarsCarriageReturnsPassAtOnce) {
  static_cast<void>(run("printf '10%%\\r50%%\\r100%%\\n' >&2"));
  EXPECT_EQ(err(), "10%\r50%\r100%\n");
}

TEST(XlaCardVariables, ABadFractionIsLeftAsItIsAndSaid) {
  const auto current = [](std::string_view name) -> std::optional<std::string> {
    if (name == "XLA_PYTHON_CLIENT_MEM_FRACTION") return "most";
    return std::nullopt;
  };
  const oomlab::CardSizing::Variables v = oomlab::jax::card_variables(2_GiB, 80_GiB, current);
  EXPECT_TRUE(v.set.empty());
  EXPECT_NE(v.note.find("is not a fraction"), std::string::npos) << v.note;
  const auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_TRUE(oomlab::jax::card_variables(80_GiB, 80_GiB, none).set.empty());  // the whole card
}

// On the H200 measured (CUDA's total 150,109,880,320 B, JAX's 64 KiB over it), 0.75 of an 8 GiB
// card was a pool of 6 GiB and 2 MiB with the share unreduced; the fraction set now, on JAX's
// total, asks at most the card's 6 GiB and less than 2 MiB under it (XLA's pool then 6 GiB).
TEST(XlaCardVariables, OnTheH200MeasuredThePoolIsAnEightGiBCards) {
  constexpr std::uint64_t kCuda = 150'109'880'320;
  constexpr std::uint64_t kJax = 150'109'945'856;
  const auto none = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  const oomlab::CardSizing::Variables v = oomlab::jax::card_variables(8_GiB, kCuda, none);
  ASSERT_EQ(v.set.size(), 1U);
  EXPECT_EQ(v.set.front().first, "XLA_PYTHON_CLIENT_MEM_FRACTION");
  const double asked = std::stod(v.set.front().second) * static_cast<double>(kJax);
  EXPECT_LE(asked, static_cast<double>(6_GiB));
  EXPECT_GT(asked, static_cast<double>(6_GiB - 2_MiB));
}

TEST(XlaInfoLines, OnlyAbslInfoLinesTheStatsBlockAndAMemDebugLinesStack) {
  using oomlab::jax::is_xla_info_line;
  EXPECT_TRUE(
      is_xla_info_line("I1129 01:46:01.218266     511 se_gpu_pjrt_client.cc:1324] Using "
                       "BFC allocator.",
                       nullptr));
  EXPECT_TRUE(is_xla_info_line("MaxInUse:                      3.70GiB", nullptr));
  EXPECT_FALSE(
      is_xla_info_line("W1129 01:46:30.393993     511 bfc_allocator.cc:598] Allocator", nullptr));
  EXPECT_FALSE(is_xla_info_line("Traceback (most recent call last):", nullptr));
  EXPECT_FALSE(is_xla_info_line("Limit: 3", nullptr));
  EXPECT_FALSE(is_xla_info_line("I1129", nullptr));
  // "[mem-debug] AllocateRaw,GPU_0_bfc,4,0x302000000,*** Begin stack trace ***", then its stack.
  const std::string begin =
      "I1129 01:46:33.048540    1192 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,GPU_0_bfc,4,0x302000000,*** Begin stack trace ***";
  const std::string frame = "\tPyObject_Vectorcall";
  const std::string end = "*** End stack trace ***";
  EXPECT_TRUE(is_xla_info_line("\t", &begin));
  EXPECT_TRUE(is_xla_info_line(frame, &frame));
  EXPECT_TRUE(is_xla_info_line(end, &frame));
  EXPECT_TRUE(is_xla_info_line("", &end));
  EXPECT_FALSE(is_xla_info_line("", nullptr));            // the user's blank line
  EXPECT_FALSE(is_xla_info_line("\tindented", nullptr));  // the user's tab
  EXPECT_FALSE(is_xla_info_line(end, nullptr));
}

}  // namespace
