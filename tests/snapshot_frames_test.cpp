// A PyTorch snapshot replayed alone, whose frames name the program: its own folders found from
// its stacks (the entry script's), so that a library on PYTHONPATH or a framework built from
// source is not taken for the user's code; and the recording's own C++ frames of a
// stacks='all' snapshot (the unwinder, PyTorch's allocator) never shown nor charged a block.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oomlab/trace.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::uint64_t kA = 0x7f0000000000;
constexpr std::uint64_t kB = 0x7f0040000000;

// A frame as a snapshot records it, and as a trace then holds it.
json frame(const std::string& name, const std::string& file, int line) {
  return {{"name", name}, {"filename", file}, {"line", line}};
}
std::string held(const json& f) {
  return fmt::format("{} ({}:{})", f.at("name").get<std::string>(),
                     f.at("filename").get<std::string>(), f.at("line").get<int>());
}

json alloc(std::uint64_t addr, std::uint64_t size, const json& frames) {
  return {{"action", "alloc"}, {"addr", addr}, {"size", size},
          {"stream", 0},       {"time_us", 0}, {"frames", frames}};
}
json segment(std::uint64_t addr, std::uint64_t size) {
  return {{"action", "segment_alloc"}, {"addr", addr}, {"size", size}, {"stream", 0}};
}

fs::path snapshot_file(const std::string& name, const json& entries) {
  const fs::path path = testing::fresh_temp_folder("snapshot_frames_" + name) / (name + ".json");
  std::ofstream(path)
      << json{{"segments", json::array()}, {"device_traces", json::array({entries})}}.dump();
  return path;
}

// The snapshot's JSON through `oomlab run replay ... --json -`, at `budget`: its `oom` record.
json replayed_oom(const fs::path& snapshot, const std::string& budget) {
  const testing::CliRun run =
      testing::run_in_process({"oomlab", "run", "replay", "--trace", snapshot.string(), "-a",
                               "torch", "--budget", budget, "--no-out", "--json", "-"});
  EXPECT_EQ(run.code, 0) << run.err;
  const json result = json::parse(run.out);
  EXPECT_TRUE(result.at("oom").is_object()) << run.out;
  return result.at("oom");
}

// The program: /work/proj/train.py calls a library on PYTHONPATH (/opt/site/mylib), which calls
// PyTorch (installed, or built from source in /src/pytorch).
const json kTorch = frame("conv2d", "/venv/lib/python3.12/site-packages/torch/nn/functional.py", 9);
const json kTorchFromSource = frame("conv2d", "/src/pytorch/torch/nn/functional.py", 9);
const json kLibrary = frame("forward", "/opt/site/mylib/layers.py", 21);
const json kMain = frame("main", "/work/proj/train.py", 30);
const json kScript = frame("<module>", "/work/proj/train.py", 40);

trace::Trace with_stacks(std::vector<std::vector<std::string>> stacks) {
  trace::Trace t;
  t.recorded.emplace();
  t.recorded->stacks = std::move(stacks);
  return t;
}

TEST(SnapshotFrames, TheProgramsFolderIsItsEntryScriptsTheOutermostModuleOfItsStacks) {
  const trace::Trace t = with_stacks({{held(kTorch), held(kLibrary), held(kMain), held(kScript)},
                                      {held(kTorch), held(kMain), held(kScript)}});
  EXPECT_EQ(trace::entry_folders(t), std::vector<std::string>{"/work/proj"});
}

TEST(SnapshotFrames, AModuleRunWithDashMIsFoundPastRunpysFrames) {
  const trace::Trace t = with_stacks(
      {{held(kTorch), "main (/work/proj/pkg/train.py:30)", "<module> (/work/proj/pkg/train.py:40)",
        "_run_code (<frozen runpy>:88)", "_run_module_as_main (<frozen runpy>:198)"}});
  EXPECT_EQ(trace::entry_folders(t), std::vector<std::string>{"/work/proj/pkg"});
}

TEST(SnapshotFrames, AProgramStartedByAnInstalledCommandHasNoFoldersFromItsStacks) {
  // pytest's console script, its package, then a test function (not a module's top level).
  const trace::Trace t =
      with_stacks({{held(kTorch), "test_step (/work/proj/tests/test_model.py:12)",
                    "pytest_pyfunc_call (/venv/lib/python3.12/site-packages/_pytest/python.py:159)",
                    "<module> (/venv/bin/pytest:8)"}});
  EXPECT_TRUE(trace::entry_folders(t).empty());
  EXPECT_TRUE(trace::entry_folders(trace::Trace{}).empty()) << "no stacks recorded";
}

TEST(SnapshotFrames, AStackCutShortOfItsScriptIsOutvotedByThoseThatReachIt) {
  // Its outermost kept frame is the library's top level, imported deep inside the program.
  const trace::Trace t = with_stacks({{held(kTorch), "<module> (/opt/site/mylib/__init__.py:3)"},
                                      {held(kTorch), held(kLibrary), held(kMain), held(kScript)},
                                      {held(kTorch), held(kMain), held(kScript)}});
  EXPECT_EQ(trace::entry_folders(t), std::vector<std::string>{"/work/proj"});
}

// The failing request comes from the library on PYTHONPATH, called from the user's main().
TEST(SnapshotFrames, AReplayNamesTheScriptsLineNotALibraryOnPythonpath) {
  const json stack = json::array({kTorch, kLibrary, kMain, kScript});
  const fs::path path =
      snapshot_file("pythonpath", json::array({segment(kA, 20_MiB), alloc(kA, 20_MiB, stack),
                                               segment(kB, 20_MiB), alloc(kB, 20_MiB, stack)}));
  const json oom = replayed_oom(path, "30MiB");
  EXPECT_EQ(oom.at("user_frame"), held(kMain)) << oom.dump(2);
  EXPECT_EQ(oom.at("frames").at(1), held(kLibrary)) << "the library's frame is still shown";
}

// PyTorch built from source and on PYTHONPATH: its frames are not the user's, nor a holder.
TEST(SnapshotFrames, AFrameworkBuiltFromSourceIsNotTheHolderOnceTheProgramsFolderIsKnown) {
  const json stack = json::array({kTorchFromSource, kMain, kScript});
  const fs::path path =
      snapshot_file("source_build", json::array({segment(kA, 20_MiB), alloc(kA, 20_MiB, stack),
                                                 segment(kB, 20_MiB), alloc(kB, 20_MiB, stack)}));
  const json oom = replayed_oom(path, "30MiB");
  EXPECT_EQ(oom.at("user_frame"), held(kMain));
  ASSERT_EQ(oom.at("holders").size(), 1U) << oom.dump(2);
  EXPECT_EQ(oom.at("holders").at(0).at("where"), "main (work/proj/train.py)");
}

// stacks='all': PyTorch's C++ frames innermost, its unwinder and allocator first.
json recording_frames() {
  return json::array(
      {frame("torch::unwind::unwind()", "??", 0),
       frame("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0),
       frame("torch::cuda::(anonymous namespace)::gather_with_cpp()", "??", 0),
       frame("std::_Function_handler<std::shared_ptr<c10::GatheredContext> (), "
             "std::shared_ptr<c10::GatheredContext> (*)()>::_M_invoke(std::_Any_data const&)",
             "??", 0),
       frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed "
             "char, unsigned long, CUstream_st*)",
             "??", 0),
       frame("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, "
             "signed char, unsigned long, CUstream_st*)",
             "??", 0)});
}

json with_recording(std::initializer_list<json> program) {
  json frames = recording_frames();
  for (const json& f : program)
    frames.push_back(f);
  return frames;
}

bool is_recording(const std::string& f) {
  for (const json& r : recording_frames()) {
    if (f == held(r)) return true;
  }
  return false;
}

TEST(SnapshotFrames, TheRecordingsOwnCppFramesAreNeverShownNorAHolder) {
  const json empty_cuda = frame("at::native::empty_cuda(c10::ArrayRef<long>)", "??", 0);
  // A block of autograd's backward thread (C++ frames only), then the failing request of the
  // user's forward, both recorded with their unwinder's frames innermost.
  const json backward =
      with_recording({empty_cuda, frame("torch::autograd::Engine::thread_main(std::shared_ptr<"
                                        "torch::autograd::GraphTask> const&)",
                                        "??", 0)});
  const json forward = with_recording(
      {empty_cuda, kTorch, kMain, kScript, frame("Py_RunMain", "??", 0), frame("_start", "??", 0)});
  const fs::path path =
      snapshot_file("stacks_all", json::array({segment(kA, 20_MiB), alloc(kA, 20_MiB, backward),
                                               segment(kB, 20_MiB), alloc(kB, 20_MiB, forward)}));
  const json oom = replayed_oom(path, "30MiB");
  const auto frames = oom.at("frames").get<std::vector<std::string>>();
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.front(), held(empty_cuda)) << "the innermost frame of the program's own";
  EXPECT_TRUE(std::none_of(frames.begin(), frames.end(), is_recording)) << oom.dump(2);
  EXPECT_EQ(oom.at("user_frame"), held(kMain));
  for (const json& block : oom.at("largest_live")) {
    const auto block_frames = block.at("frames").get<std::vector<std::string>>();
    EXPECT_TRUE(std::none_of(block_frames.begin(), block_frames.end(), is_recording))
        << block.dump(2);
  }
  ASSERT_EQ(oom.at("holders").size(), 1U) << oom.dump(2);
  EXPECT_EQ(oom.at("holders").at(0).at("where"),
            "at::native::empty_cuda(c10::ArrayRef<long>) (?"
            "?)")
      << "the backward thread's block is charged to its innermost frame that is the program's";

  const testing::CliRun text =
      testing::run_in_process({"oomlab", "run", "replay", "--trace", path.string(), "-a", "torch",
                               "--budget", "30MiB", "--no-out"});
  ASSERT_EQ(text.code, 0) << text.err;
  for (const json& r : recording_frames()) {
    EXPECT_EQ(text.out.find(r.at("name").get<std::string>()), std::string::npos)
        << r.at("name") << " in\n"
        << text.out;
  }
  EXPECT_NE(text.out.find("where      main (train.py:30)"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace oomlab
