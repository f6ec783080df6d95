// XLA's warning when its rematerialisation cannot bring a step under what its limit leaves it,
// read from the program's stderr (jax/exec/xla_remat.hpp), and exec's model naming it for the
// step the pool refused. tests/data/exec/xla_oom_stderr.txt (the lm at batch 8 on an H200, see
// jax_exec_test.cpp) holds the warning at line 63 and, on the same thread (511), the pool's
// refusal of the step's 10.11 GiB at line 66; the first test's two warnings are the convnet's
// (jax_convnet.py) under the tight limit on the same card, at batch 1 and 104.
#include "jax/exec/xla_remat.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "jax/exec/xla_model.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

constexpr std::uint64_t kRounded = 10'851'375'616;  // "(rounded to 10851375616)"

std::string stderr_fixture() {
  return oomlab::testing::test_data_dir() + "/exec/xla_oom_stderr.txt";
}

// The fixture with each `from` replaced by its `to` once, in a file of its own.
fs::path edited(const std::string& name,
                std::initializer_list<std::pair<std::string, std::string>> changes) {
  std::string text = oomlab::testing::read_text(stderr_fixture());
  for (const auto& [from, to] : changes) {
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  const fs::path path =
      fs::temp_directory_path() / ("oomlab-remat-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(XlaRemat, AWarningsThreeFiguresAreRead) {
  const auto cut = oomlab::jax::read_remat_warning(
      "Can't reduce memory use below 211.20MiB (221462842 bytes) by rematerialization; only "
      "reduced to 312.08MiB (327241332 bytes), down from 342.64MiB (359281012 bytes) originally");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->target_bytes, 221'462'842U);
  EXPECT_EQ(cut->reduced_bytes, 327'241'332U);
  EXPECT_EQ(cut->original_bytes, 359'281'012U);
  // Under the tight limit at batch 104 the convnet's step came out larger than it went in.
  const auto none = oomlab::jax::read_remat_warning(
      "Can't reduce memory use below 210.61MiB (220842662 bytes) by rematerialization; only "
      "reduced to 9.94GiB (10673645647 bytes), down from 9.91GiB (10636755644 bytes) originally");
  ASSERT_TRUE(none);
  EXPECT_GT(none->reduced_bytes, none->original_bytes);
  EXPECT_FALSE(oomlab::jax::read_remat_warning("Can't reduce memory use below 5.64GiB"));
  // A count that is not one leaves the figure XLA printed beside it; a figure missing, nothing.
  const auto printed = oomlab::jax::read_remat_warning(
      "Can't reduce memory use below 1.50GiB (12x4 bytes) by rematerialization; only reduced to "
      "2GiB (2147483904 bytes), down from 3GiB (3221225472 bytes) originally");
  ASSERT_TRUE(printed);
  EXPECT_EQ(printed->target_bytes, 1'610'612'736U);
  EXPECT_EQ(printed->reduced_bytes, 2'147'483'904U);
  EXPECT_EQ(printed->original_bytes, 3'221'225'472U);
  EXPECT_FALSE(oomlab::jax::read_remat_warning(
      "Can't reduce memory use below 1GiB (1073741824 bytes) by rematerialization; only reduced "
      "to some (n/a), down from 3GiB (3221225472 bytes) originally"));
  EXPECT_FALSE(oomlab::jax::read_remat_warning("Allocator (GPU_0_bfc) ran out of memory"));
}

TEST(XlaRemat, TheStepsWarningIsTheLastOnTheThreadTheRefusalCameFrom) {
  // An earlier warning on the same thread, before the step's.
  const fs::path earlier = edited(
      "earlier", {{"W1129 01:46:18.421272     511 hlo_rematerialization",
                   "W1129 01:46:10.000000     511 hlo_rematerialization.cc:3363] Can't reduce "
                   "memory use below "
                   "1.00GiB (1073741824 bytes) by rematerialization; only reduced to 2.00GiB "
                   "(2147483648 bytes), "
                   "down from 3.00GiB (3221225472 bytes) originally\nW1129 01:46:18.421272     511 "
                   "hlo_rematerialization"}});
  const auto last = oomlab::jax::remat_shortfall(earlier, kRounded);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->reduced_bytes, 12'599'571'308U);
  EXPECT_EQ(last->line, 64U);
  fs::remove(earlier);
  // The request as the program asked it: under the rounded figure by less than 256 bytes.
  const auto step = oomlab::jax::remat_shortfall(stderr_fixture(), kRounded - 200);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->target_bytes, 6'499'210'676U);
  EXPECT_EQ(step->reduced_bytes, 12'599'571'308U);
  EXPECT_EQ(step->original_bytes, 18'912'490'708U);
  EXPECT_EQ(step->line, 63U);
  EXPECT_FALSE(oomlab::jax::remat_shortfall(stderr_fixture(), kRounded - 256)) << "another size";
  EXPECT_FALSE(oomlab::jax::remat_shortfall(stderr_fixture(), kRounded + 1)) << "over its chunk";
  EXPECT_FALSE(oomlab::jax::remat_shortfall(stderr_fixture() + ".absent", kRounded));
  // The same warning logged by another thread (a compiler's) is not the refused step's.
  const fs::path other =
      edited("other", {{"   511 hlo_rematerialization", "   512 hlo_rematerialization"}});
  EXPECT_FALSE(oomlab::jax::remat_shortfall(other, kRounded));
  fs::remove(other);
}

// A warning written after a progress bar's last update on the same line, TensorFlow's prefix
// without thread ids (its default), and an earlier refusal of the same size on another thread
// (the last refusal is the fatal one).
TEST(XlaRemat, ReadAfterAProgressBarWithoutThreadsAndAtTheLastRefusal) {
  const std::string warning = "W1129 01:46:18.421272     511 hlo_rematerialization";
  const fs::path bar =
      edited("bar", {{warning, "\r 40%|####      | 4/10 [00:02<00:03]" + warning}});
  const auto after_bar = oomlab::jax::remat_shortfall(bar, kRounded);
  ASSERT_TRUE(after_bar);
  EXPECT_EQ(after_bar->line, 63U);
  const fs::path tf = edited(
      "tf",
      {{"W1129 01:46:18.421272     511 hlo_rematerialization.cc:3363]",
        "2026-11-29 01:46:18.421272: W external/xla/xla/service/hlo_rematerialization.cc:3363]"},
       {"W1129 01:46:30.393993     511 bfc_allocator.cc:598]",
        "2026-11-29 01:46:30.393993: W external/xla/xla/tsl/framework/bfc_allocator.cc:598]"}});
  const auto threadless = oomlab::jax::remat_shortfall(tf, kRounded);
  ASSERT_TRUE(threadless);
  EXPECT_EQ(threadless->reduced_bytes, 12'599'571'308U);
  const fs::path twice =
      edited("twice", {{warning,
                        "W1129 01:46:17.000000     777 bfc_allocator.cc:598] Allocator (GPU_0_bfc) "
                        "ran out of memory trying to allocate 10.11GiB (rounded to 10851375616) "
                        "from the lower end requested by op \n" +
                            warning}});
  const auto fatal = oomlab::jax::remat_shortfall(twice, kRounded);
  ASSERT_TRUE(fatal) << "the first refusal, on a thread with no warning, is not the fatal one";
  EXPECT_EQ(fatal->line, 64U);
  for (const fs::path& p : {bar, tf, twice})
    fs::remove(p);
}

// exec's model of a run whose stderr holds the warning of the step the pool refused: the log of
// tests/data/exec/xla_log_batch4_8gib.txt refused 5,085,851,160 B (4.74 GiB); the stderr is the
// fixture with its refusal's figure made that request's. A refusal of another size names nothing.
TEST(XlaRemat, ExecsModelSaysWhatXlasRematerialisationCouldNotDo) {
  const fs::path folder =
      oomlab::testing::fresh_temp_folder("oomlab-remat-run-" + std::to_string(::getpid()));
  const fs::path data = fs::path(oomlab::testing::test_data_dir()) / "exec";
  fs::copy_file(data / "xla_log_batch4_8gib.txt", folder / "xla-log.txt");
  const auto model = [&](const fs::path& err, bool with_dump) {
    fs::remove_all(folder / "xla-dump");
    if (with_dump) fs::copy(data / "xla_dump" / "lm_b4", folder / "xla-dump");
    fs::copy_file(err, folder / "stderr.txt", fs::copy_options::overwrite_existing);
    oomlab::RunResult run;
    run.outcome = oomlab::Outcome::oom;
    run.budget_bytes = 8_GiB;
    run.device.emplace().total_bytes = 140_GiB;
    run.program.emplace().snapshots = {folder / "xla-log.txt"};
    run.program->stderr_file = "stderr.txt";
    run.program->peak_bytes = 7_GiB;
    run.oom.emplace();
    oomlab::jax::model_xla_run(run, nullptr);
    std::string said;
    for (const std::string& n : run.models.empty() ? run.notes : run.models.front().notes)
      said += n.find("rematerialisation") != std::string::npos ? n : "";
    return said;
  };
  const std::pair<std::string, std::string> step_request = {"(rounded to 10851375616)",
                                                            "(rounded to 5085851392)"};
  const fs::path same = edited("same", {step_request});
  const std::string said = model(same, true);
  EXPECT_NE(said.find("could not bring the step under the 6.05 GiB it aimed at"), std::string::npos)
      << said;
  EXPECT_NE(said.find("the step still needs 11.7 GiB (17.6 GiB before rematerialising; "
                      "stderr.txt line 63)"),
            std::string::npos)
      << said;
  EXPECT_EQ(model(stderr_fixture(), true), "") << "the warning of a step the pool did not refuse";
  EXPECT_EQ(model(same, false), "") << "no dump: no step of the refused temp to name";
  // An estimate that cannot hold the refused temp is another step's.
  const fs::path small = edited("small", {step_request,
                                          {"only reduced to 11.73GiB (12599571308 bytes)",
                                           "only reduced to 4.00GiB (4294967296 bytes)"}});
  EXPECT_EQ(model(small, true), "");
  fs::remove(small);
  fs::remove(same);
  fs::remove_all(folder);
}

}  // namespace
