// XLA's dump of what it compiled (jax::compiled_step): the step whose temp buffer the pool
// refused, where the program called it and what its buffers hold at its peak, by the program's
// lines. tests/data/exec/xla_dump/lm_b4 is XLA's dump of tests/data/exec/jax_lm.py --batch 4 on an
// H200 (JAX 0.11.2, a card of 8 GiB, XLA_FLAGS=--xla_dump_to=...), its train step's three files
// trimmed: the HLO to its stack-frame tables, its ENTRY computation's head and end, and the
// instructions live at the peak (their backend_config cut), the buffer assignment to its first
// and its temp allocations' heads, the live ranges to the peak's list.
#include "jax/trace/xla_dump.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

#include "jax/exec/xla_model.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

// Where the program was when XLA compiled it, as the dump's file table names it.
constexpr std::string_view kRecordedProgram = "/work/main/tests/data/exec/jax_lm.py";

std::string program() {
  return oomlab::testing::test_data_dir() + "/exec/jax_lm.py";
}

// The dump, copied to `to` with the program's path in it made this checkout's.
fs::path dump(const fs::path& to) {
  fs::remove_all(to);
  fs::create_directories(to);
  const fs::path from = fs::path(oomlab::testing::test_data_dir()) / "exec" / "xla_dump" / "lm_b4";
  for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    std::string body = text.str();
    // Past each replacement: this checkout's path may hold the recorded one (a clone in a
    // folder under which /work/main lies), and searching inside it would never end.
    const std::string here = program();
    for (std::size_t at = body.find(kRecordedProgram); at != std::string::npos;
         at = body.find(kRecordedProgram, at + here.size()))
      body.replace(at, kRecordedProgram.size(), here);
    std::ofstream(to / entry.path().filename()) << body;
  }
  return to;
}

fs::path scratch(std::string_view name) {
  return fs::temp_directory_path() / fmt::format("oomlab-xla-dump-{}-{}", name, ::getpid());
}

std::string line_of(const fs::path& file, int number) {
  std::ifstream in(file);
  std::string line;
  for (int i = 0; i < number && std::getline(in, line); ++i) {
  }
  return line;
}

// The step's temp, as the pool was asked for it ("AllocateRaw GPU_0_bfc 5085851160").
constexpr std::uint64_t kTemp = 5'085'851'160;

TEST(XlaDump, TheRefusedTempNamesTheStepWhereTheProgramCalledItAndWhatItHolds) {
  const fs::path folder = dump(scratch("names"));
  const std::optional<oomlab::jax::CompiledStep> step =
      oomlab::jax::compiled_step(folder, kTemp, "jit_train_step", 10);
  fs::remove_all(folder);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->name, "jit_train_step");
  // XLA's own figure: "Stack trace breakdown for peak usage: 5 619 691 540 bytes".
  EXPECT_EQ(step->peak_bytes, 5'619'691'540U);
  ASSERT_FALSE(step->call_frames.empty());
  const std::string program = ::program();
  EXPECT_EQ(step->call_frames.front(), "main (" + program + ":96)");
  EXPECT_NE(line_of(program, 96).find("train_step("), std::string::npos)
      << "the line called the step: " << line_of(program, 96);
  ASSERT_EQ(step->holders.size(), 10U);
  for (std::size_t i = 1; i < step->holders.size(); ++i)
    EXPECT_GE(step->holders[i - 1].bytes, step->holders[i].bytes);
  const std::uint64_t shown = std::accumulate(
      step->holders.begin(), step->holders.end(), std::uint64_t{0},
      [](std::uint64_t sum, const oomlab::trace::MemoryHolder& h) { return sum + h.bytes; });
  EXPECT_LE(shown, step->peak_bytes);
  // The attention's probabilities, batch 4 x 16 heads x 1024 x 1024 floats in each of 8 layers.
  const oomlab::trace::MemoryHolder& most = step->holders.front();
  EXPECT_EQ(most.where, "block_apply (" + program + ":45)");
  EXPECT_NE(line_of(program, 45).find("softmax"), std::string::npos) << line_of(program, 45);
  EXPECT_GE(most.bytes, 8 * 4 * 16 * 1024 * 1024 * std::uint64_t{4});
  const auto argument = std::find_if(step->holders.begin(), step->holders.end(),
                                     [](const oomlab::trace::MemoryHolder& h) {
                                       return h.where == "m (an argument of train_step)";
                                     });
  EXPECT_NE(argument, step->holders.end()) << "Adam's first moments, passed to the step";
}

TEST(XlaDump, ADumpKeepsOnlyTheFilesOfTheStepThatFailed) {
  const fs::path folder = dump(scratch("kept"));
  std::ofstream(folder / "module_0662.jit__threefry_seed.config.pbtxt") << "other module\n";
  const auto step = oomlab::jax::compiled_step(folder, kTemp, "", 10);
  ASSERT_TRUE(step.has_value());
  oomlab::jax::keep_in_dump(folder, &*step);
  EXPECT_FALSE(fs::exists(folder / "module_0662.jit__threefry_seed.config.pbtxt"));
  EXPECT_EQ(std::distance(fs::directory_iterator(folder), fs::directory_iterator()), 3);
  EXPECT_TRUE(oomlab::jax::compiled_step(folder, kTemp, "", 10).has_value()) << "read again";
  oomlab::jax::keep_in_dump(folder, nullptr);
  EXPECT_FALSE(fs::exists(folder)) << "a run with no step to name keeps no dump";
}

TEST(XlaDump, NoStepWhereNoTempIsTheRefusedRequest) {
  const fs::path folder = dump(scratch("none"));
  EXPECT_FALSE(oomlab::jax::compiled_step(folder, kTemp + 256, "jit_train_step", 10));
  EXPECT_FALSE(oomlab::jax::compiled_step(folder / "absent", kTemp, "", 10));
  fs::remove_all(folder);
}

// exec's model of a run whose log and dump lie together (the log of the same program at batch 4
// on an 8 GiB card, tests/data/exec/xla_log_batch4_8gib.txt, refused the same 4.74 GiB temp): the
// OOM's holders are the step's buffers at its peak, and its place is where the program called the
// step, not where JAX's traceback raised it.
TEST(XlaDump, ExecsModelNamesTheStepsLinesForTheOom) {
  const fs::path run_folder =
      fs::temp_directory_path() / ("oomlab-xla-run-" + std::to_string(::getpid()));
  fs::remove_all(run_folder);
  fs::create_directories(run_folder);
  static_cast<void>(dump(run_folder / "xla-dump"));
  fs::copy_file(fs::path(oomlab::testing::test_data_dir()) / "exec" / "xla_log_batch4_8gib.txt",
                run_folder / "xla-log.txt");
  const std::string program = ::program();
  oomlab::RunResult run;
  run.outcome = oomlab::Outcome::oom;
  run.budget_bytes = 8_GiB;
  run.device.emplace().total_bytes = 140_GiB;
  run.program.emplace().snapshots = {run_folder / "xla-log.txt"};
  run.program->peak_bytes = 7_GiB;
  run.program->command = {"python3", program, "--batch", "4"};
  run.oom.emplace();
  run.oom->program = oomlab::ProgramMessage{
      .framework = "JAX/XLA",
      .line =
          "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
          "allocate 4.74GiB with allocator GPU_0_bfc on device 0. "
          "[executable_name='jit_train_step'] [tf-allocator-allocation-error='']"};
  run.oom->frames = {"main (" + program + ":97)", "<module> (" + program + ":101)"};
  run.oom->frames_from = "traceback";
  run.oom->user_frame = run.oom->frames.front();
  oomlab::jax::model_xla_run(run, nullptr);
  EXPECT_EQ(run.oom->frames_from, "compiled");
  EXPECT_EQ(run.oom->user_frame, "main (" + program + ":96)");
  EXPECT_NE(run.oom->user_line.find("train_step("), std::string::npos) << run.oom->user_line;
  ASSERT_FALSE(run.oom->holders.empty());
  EXPECT_EQ(run.oom->holders.front().where, "block_apply (" + program + ":45)");
  ASSERT_EQ(run.models.size(), 1U);
  const std::vector<std::string>& notes = run.models.front().notes;
  const auto said = [&](std::string_view words) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.find(words) != std::string::npos; });
  };
  EXPECT_TRUE(said("JAX raised the OOM at main (" + program + ":97)"));
  EXPECT_TRUE(said("the step jit_train_step asked XLA's pool for its temp buffer, 4.74 GiB"));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(run_folder / "xla-dump"), fs::directory_iterator()), 3);
  fs::remove_all(run_folder);
}

}  // namespace
