// ARCHITECTURE.md's "Where to add things" followed literally: an allocator adaptor, a scenario
// and an OOM message, each written here as a newcomer would and shown to work; and a framework,
// Toy (tests/toy_framework/: a model of its allocator and its trace format, in a folder of its
// own, touching no engine file), driven through the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "allocators/backends.hpp"
#include "analysis/oom_analysis.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "exec/oom_message.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/caching_allocator.hpp"
#include "oomlab/program_replay.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/scenario.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;

// The adaptor: refuses, as an OOM of the allocator, any request larger than a limit (as a
// driver refuses one past its largest allocation), and counts its refusals. AllocatorAdaptor
// forwards everything else, capabilities included.
class RequestLimit final : public AllocatorAdaptor {
 public:
  RequestLimit(std::unique_ptr<Allocator> upstream, std::uint64_t limit_bytes)
      : AllocatorAdaptor(std::move(upstream)), limit_(limit_bytes) {}

  [[nodiscard]] std::uint64_t refusals() const { return refusals_; }

 private:
  AllocResult do_allocate(std::size_t bytes, Stream stream) override {
    if (bytes > limit_) return refuse();
    return upstream().allocate(bytes, stream);
  }
  // The same rule, or a probe would let a request past the limit.
  AllocStatus do_probe(std::size_t bytes, Stream stream) override {
    return bytes > limit_ ? AllocStatus::out_of_memory : upstream().probe(bytes, stream);
  }
  AllocResult refuse() {
    ++refusals_;
    return {nullptr, AllocStatus::out_of_memory, 0};
  }

  std::uint64_t limit_;
  std::uint64_t refusals_ = 0;
};

std::unique_ptr<Allocator> sim(std::uint64_t budget) {
  return make_sim_backend(Params(find_backend("sim")->options), budget);
}

std::unique_ptr<Allocator> torch_model(std::uint64_t budget) {
  return make_backend(torch::torch_kind(), Params(find_backend("torch")->options),
                      {.budget_bytes = budget});
}

TEST(ArchitectureGuideAdaptor, GivesDistinctBlocksAndRefusesPastItsLimitAsAnOom) {
  RequestLimit a(sim(256_MiB), 16_MiB);
  std::set<void*> seen;
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (const std::size_t size : {4_KiB, 1_MiB, 16_MiB, 3_MiB}) {
    const AllocResult r = a.allocate(size, {});
    ASSERT_TRUE(r.ok()) << size;
    EXPECT_TRUE(seen.insert(r.ptr).second) << "pointer handed out twice";
    blocks.emplace_back(r.ptr, size);
  }
  const AllocResult over = a.allocate(16_MiB + 1, {});  // 240 MiB are free: only the limit refuses
  EXPECT_TRUE(is_oom(over.status));
  EXPECT_EQ(over.ptr, nullptr);
  EXPECT_EQ(a.refusals(), 1U);
  EXPECT_TRUE(is_oom(a.allocate(1_GiB, {}).status));  // past the upstream's budget too
  for (const auto& [ptr, size] : blocks)
    a.deallocate(ptr, size, {});
  EXPECT_EQ(a.reserved_bytes(), 0U);
}

TEST(ArchitectureGuideAdaptor, ForwardsWhatItDoesNotChangeToItsUpstream) {
  const std::unique_ptr<Allocator> reference = sim(64_MiB);
  RequestLimit a(sim(64_MiB), 32_MiB);
  EXPECT_TRUE(a.simulated());  // Allocator's default says false
  EXPECT_EQ(a.name(), reference->name());
  EXPECT_EQ(a.footprint(3_MiB), 4_MiB);  // the sim's whole pages; the default says 3 MiB
  EXPECT_EQ(a.probe(8_MiB, {}), AllocStatus::ok);
  EXPECT_EQ(a.probe(33_MiB, {}), AllocStatus::out_of_memory);
  EXPECT_EQ(a.reserved_bytes(), 0U) << "a probe leaves the allocator as it found it";
  const AllocResult held = a.allocate(32_MiB, {});
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(a.probe(32_MiB, {}), AllocStatus::ok);
  EXPECT_TRUE(is_oom(a.probe(32_MiB + 2_MiB, {})));  // the upstream's answer: 32 MiB are left
  a.trim();
  EXPECT_EQ(a.state().device_free_bytes, 32_MiB);
  EXPECT_EQ(a.capability<CachingAllocator>(), nullptr);  // the sim caches nothing
  a.deallocate(held.ptr, 32_MiB, {});
}

TEST(ArchitectureGuideAdaptor, OverTheTorchModelItsCacheIsStillFound) {
  RequestLimit a(torch_model(256_MiB), 16_MiB);
  const CachingAllocator* cache = a.capability<CachingAllocator>();
  ASSERT_NE(cache, nullptr);
  const AllocResult r = a.allocate(3_MiB, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cache->cache_state().reserved_bytes, 20_MiB);  // large_segment_size for 1 to 10 MiB
  ASSERT_EQ(cache->device_calls().size(), 1U);
  EXPECT_EQ(cache->device_calls()[0].bytes, 20_MiB);
  a.deallocate(r.ptr, 3_MiB, {});
}

TEST(ArchitectureGuideAdaptor, PlacedBlocksOverTheLimitAreRefusedAndTheRestPlaced) {
  RequestLimit a(torch_model(256_MiB), 16_MiB);
  const std::vector<PlacedSegment> segments{
      {.bytes = 64_MiB,
       .blocks = {{.offset = 0, .bytes = 8_MiB}, {.offset = 8_MiB, .bytes = 40_MiB}}},
      {.bytes = 4_MiB, .blocks = {{.offset = 0, .bytes = 4_MiB}}}};
  const std::vector<AllocResult> r = allocate_placed(a, segments);
  ASSERT_EQ(r.size(), 3U);
  EXPECT_TRUE(r[0].ok());
  EXPECT_TRUE(is_oom(r[1].status));
  EXPECT_TRUE(r[2].ok());
  EXPECT_EQ(a.refusals(), 1U);
  const CachingAllocator& cache = *a.capability<CachingAllocator>();
  // Both segments rebuilt, the refused block cached in the first: no device call made.
  EXPECT_EQ(cache.cache_state().reserved_bytes, 68_MiB);
  EXPECT_EQ(cache.cache_state().allocated_bytes, 12_MiB);
  const AllocResult in_gap = a.allocate(16_MiB, {});
  ASSERT_TRUE(in_gap.ok());
  EXPECT_EQ(static_cast<char*>(in_gap.ptr) - static_cast<char*>(r[0].ptr), 8_MiB);
  EXPECT_TRUE(cache.device_calls().empty());
  for (const auto& [ptr, bytes] :
       {std::pair{r[0].ptr, 8_MiB}, std::pair{r[2].ptr, 4_MiB}, std::pair{in_gap.ptr, 16_MiB}})
    a.deallocate(ptr, bytes, {});
}

// The scenario: a staircase of equal blocks held until the allocator refuses one. Registered
// globally because run_scenario only creates scenarios from Registry::global() (the registry
// has no local form a run can use); its "test-" name keeps it out of `matrix --scenarios all`
// (matrix_plan.cpp), and `oomlab list` and the matrix run the oomlab binary, which does not link
// the tests.
class Staircase final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-architecture-staircase"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: equal blocks held until the allocator refuses one";
  }
  [[nodiscard]] ParamSpec params() const override {
    return {{.name = "block",
             .type = ParamType::bytes,
             .default_value = Bytes{8_MiB},
             .help = "bytes of each step"}};
  }
  void run(RunContext& ctx) override {
    ctx.phase("climb");
    std::vector<Block> held;
    for (std::uint64_t n = 0; !ctx.stop_requested(); ++n) {
      Block b = ctx.allocate(ctx.params().bytes("block"), "step");
      if (!b) {
        ctx.metric("blocks_held", static_cast<double>(n));
        // What only some scenarios need is an extension of the context, asked for by type.
        ctx.metric("program_replay_offered", ctx.extension<ProgramReplay>() != nullptr ? 1 : 0);
        return;
      }
      held.push_back(b);
    }
  }
};
OOMLAB_REGISTER_SCENARIO(Staircase)

TEST(ArchitectureGuideScenario, RunsOnSimThroughRunScenarioAndStopsAtItsOom) {
  RunConfig config = testing::make_run_config("test-architecture-staircase", "sim", 64_MiB);
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->request_bytes, 8_MiB);
  EXPECT_EQ(r.oom->phase, "climb");
  EXPECT_EQ(r.oom->live_bytes, 64_MiB);  // 8 blocks of 8 MiB fill the 64 MiB budget
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::capacity);
  EXPECT_EQ(testing::metric(r, "blocks_held"), 8);
  EXPECT_EQ(testing::metric(r, "program_replay_offered"), 1) << "the harness's context has it";

  config.params.set("block", Bytes{3_MiB});  // two 2 MiB pages each: 16 blocks in 32 pages
  EXPECT_EQ(testing::metric(run_scenario(config), "blocks_held"), 16);
}

// The OOM message: the recogniser table cannot grow from a test, so this goes through the
// public entries the guide names with PyTorch 2.1's real line (as in oom_message_test.cpp).
constexpr std::string_view kTorchLine =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.96 GiB. GPU 0 has a "
    "total capacty of 23.69 GiB of which 5.25 GiB is free. Process 2006998 has 256.00 MiB "
    "memory in use. Including non-PyTorch memory, this process has 18.17 GiB memory in use. Of "
    "the allocated memory 17.88 GiB is allocated by PyTorch, and 0 bytes is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF";

TEST(ArchitectureGuideOomMessage, AFrameworkLineIsRecognisedAndKeptByTheScanner) {
  const std::optional<ProgramOom> line = recognise_oom_line(kTorchLine);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->framework, "PyTorch");
  EXPECT_EQ(line->request_bytes, 6399501271U);  // 5.96 GiB, as the message rounds it
  EXPECT_FALSE(recognise_oom_line("allocated memory 17.88 GiB").has_value());

  OomScanner scanner;
  scanner.feed_line("epoch 3: loss 0.412");
  scanner.feed_line(kTorchLine);
  scanner.feed_line("Traceback (most recent call last):");
  ASSERT_TRUE(scanner.found().has_value());
  EXPECT_EQ(scanner.lines_seen(), 1U);
  EXPECT_EQ(scanner.found()->framework_cached_free_bytes, 0U);
  // Nothing reserved-but-unallocated to reuse: the cache is not the problem.
  EXPECT_EQ(diagnose_program_oom(*scanner.found()).cause, Cause::capacity);
}

TEST(ArchitectureGuideOomMessage, OomlabsOwnCauseComesFromDiagnoseOnEvidence) {
  // 960 MiB free in total under a 1 GiB budget and no block of 2 MiB: fragmentation.
  const OomEvidence fragmented{.request_bytes = 2_MiB,
                               .budget_bytes = 1_GiB,
                               .live_bytes = 64_MiB,
                               .largest_free_bytes = 0,
                               .real_device = false};
  const Diagnosis d = diagnose(fragmented);
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_EQ(d.free_bytes, 1_GiB - 64_MiB);
  EXPECT_FALSE(d.advice.empty());
  OomEvidence full = fragmented;  // the budget all live: nothing free to place it in
  full.live_bytes = 1_GiB;
  EXPECT_EQ(diagnose(full).cause, Cause::capacity);
}

}  // namespace
}  // namespace oomlab

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

oomlab::cli::ChildResult oomlab_with(std::vector<std::string> args, bool plugin = true) {
  if (plugin) {
    args.insert(args.begin(), oomlab::testing::test_plugin("toy_framework"));
    args.insert(args.begin(), "--plugin");
  }
  args.insert(args.begin(), oomlab::testing::oomlab_binary());
  return oomlab::cli::run_child(args, {.timeout = std::chrono::seconds(60)});
}

// Three blocks of 1.5 MiB live at once, then all freed.
fs::path toy_trace(const std::string& name, const std::string& extra = {}) {
  const fs::path path = oomlab::testing::fresh_temp_folder("toy_framework_" + name) / "job.toy";
  std::ofstream(path) << "# oomlab toy trace\n"
                      << "alloc 1572864 0x1000\nalloc 1572864 0x2000\n"
                      << extra << "alloc 1572864 0x3000\n"
                      << "free 0x1000\nfree 0x2000\nfree 0x3000\n";
  return path;
}

json replay(const fs::path& trace, const std::string& allocator, const std::string& budget) {
  const oomlab::cli::ChildResult r = oomlab_with({"run", "replay", "--trace", trace.string(), "-a",
                                                  allocator, "--budget", budget, "--json", "-"});
  EXPECT_TRUE(r.exit_code == oomlab::cli::kExitOk || r.exit_code == oomlab::cli::kExitCheckFailed)
      << r.exit_code << ": " << r.err_tail;
  return json::parse(r.out, nullptr, false);
}

TEST(ArchitectureGuideFramework, ListShowsTheBackendAndTheFormatItAdds) {
  const oomlab::cli::ChildResult text = oomlab_with({"list"});
  ASSERT_EQ(text.exit_code, oomlab::cli::kExitOk) << text.err_tail;
  const auto formats = text.out.find("Trace formats");
  ASSERT_NE(formats, std::string::npos) << text.out;
  const auto slab = text.out.find("  slab ");
  ASSERT_NE(slab, std::string::npos) << text.out;
  EXPECT_LT(slab, formats) << "slab is listed among the allocators";
  EXPECT_NE(text.out.find("  toy ", formats), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  pytorch ", formats), std::string::npos) << text.out;

  const oomlab::cli::ChildResult doc = oomlab_with({"list", "--json"});
  ASSERT_EQ(doc.exit_code, oomlab::cli::kExitOk) << doc.err_tail;
  const json j = json::parse(doc.out);
  std::vector<std::string> allocators;
  std::vector<std::string> trace_formats;
  for (const json& a : j["allocators"])
    allocators.push_back(a["name"]);
  for (const json& f : j["trace_formats"])
    trace_formats.push_back(f["name"]);
  EXPECT_NE(std::find(allocators.begin(), allocators.end(), "slab"), allocators.end());
  EXPECT_EQ(allocators.back(), "auto") << "auto stays last";
  // The engine's, then the wings' (in the order frameworks registered), then the plugin's.
  EXPECT_EQ(trace_formats, (std::vector<std::string>{"oomlab", "rmm", "xla", "pytorch", "toy"}));
  ASSERT_FALSE(j["frameworks"].empty());
  std::vector<std::string> frameworks;
  for (const json& f : j["frameworks"])
    frameworks.push_back(f["name"]);
  EXPECT_EQ(frameworks, (std::vector<std::string>{"CUDA.jl", "CuPy", "JAX", "PyTorch", "RMM",
                                                  "TensorFlow", "Toy"}))
      << "every registered framework, the plugin's too, in name order";
}

// On slab:slab=4MiB each block costs 4 MiB, so the third does not fit in 10 MiB; on the sim's
// 2 MiB pages all three do (6 MiB). The format is detected by its header, the backend built by
// the plugin's factory.
TEST(ArchitectureGuideFramework, ReplaysItsTraceOnItsBackendAndOnTheSim) {
  const fs::path trace = toy_trace("replay");
  const json slab = replay(trace, "slab:slab=4MiB", "10MiB");
  ASSERT_TRUE(slab.is_object());
  EXPECT_EQ(slab["allocator"]["name"], "slab");
  EXPECT_EQ(slab["outcome"], "oom") << slab.dump(1);
  EXPECT_EQ(slab["oom"]["request_bytes"], 1572864);

  const json sim = replay(trace, "sim", "10MiB");
  ASSERT_TRUE(sim.is_object());
  EXPECT_EQ(sim["outcome"], "completed") << sim.dump(1);
}

TEST(ArchitectureGuideFramework, ScenariosRunOnItsBackend) {
  const oomlab::cli::ChildResult r =
      oomlab_with({"run", "fragmentation", "-a", "slab", "--budget", "64MiB", "--json", "-"});
  ASSERT_TRUE(r.exit_code == oomlab::cli::kExitOk || r.exit_code == oomlab::cli::kExitCheckFailed)
      << r.err_tail;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["allocator"]["name"], "slab");
  EXPECT_EQ(j["outcome"], "oom");
}

// auto replays a toy trace through Toy's own model, as it replays a PyTorch snapshot through
// torch: the format names the backend (FormatInfo::replayed_by), the backend its notice.
TEST(ArchitectureGuideFramework, AutoReplaysItsTracesThroughItsModel) {
  const oomlab::cli::ChildResult r = oomlab_with(
      {"run", "replay", "--trace", toy_trace("auto").string(), "--budget", "5MiB", "--json", "-"});
  ASSERT_TRUE(r.exit_code == oomlab::cli::kExitOk || r.exit_code == oomlab::cli::kExitCheckFailed)
      << r.err_tail;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["allocator"]["name"], "slab");
  EXPECT_EQ(j["outcome"], "oom") << "3 blocks of 2 MiB slabs in 5 MiB";
  EXPECT_NE(r.err_tail.find("a toy trace: replayed through 'slab'"), std::string::npos)
      << r.err_tail;
}

TEST(ArchitectureGuideFramework, ItsImportersErrorsNameTheLineAndWithoutItTheFileIsUnknown) {
  const fs::path bad = toy_trace("bad", "alloc lots 0x4000\n");
  const oomlab::cli::ChildResult r = oomlab_with({"run", "replay", "--trace", bad.string()});
  EXPECT_EQ(r.exit_code, oomlab::cli::kExitUsage);
  EXPECT_NE(r.err_tail.find("job.toy:4: 'lots' is not a number"), std::string::npos) << r.err_tail;

  const oomlab::cli::ChildResult bare =
      oomlab_with({"run", "replay", "--trace", toy_trace("bare").string()}, false);
  EXPECT_EQ(bare.exit_code, oomlab::cli::kExitUsage);
  EXPECT_NE(bare.err_tail.find("not a trace oomlab knows (an events.csv, an RMM log, XLA's "
                               "allocator log (xla-log.txt), or a PyTorch snapshot as pickle or "
                               "JSON)"),
            std::string::npos)
      << bare.err_tail;
}

// Toy grows by a command of its own, registered through Framework::add_commands and a public
// header: `oomlab --help` lists it, it runs, and CLI11 refuses its bad flags as it does the
// engine's (exit 2). Each 1.5 MiB block costs two 1 MiB slabs (or one of 2 MiB): the third
// allocation, line 4, holds the most.
TEST(ArchitectureGuideFramework, ItsOwnCommandIsOnTheCommandLine) {
  const oomlab::cli::ChildResult help = oomlab_with({"--help"});
  EXPECT_EQ(help.exit_code, oomlab::cli::kExitOk) << help.err_tail;
  EXPECT_NE(help.out.find("slabs"), std::string::npos) << help.out;
  EXPECT_EQ(oomlab_with({"--help"}, false).out.find("slabs"), std::string::npos)
      << "without the plugin, no such command";

  const fs::path trace = toy_trace("command");
  const oomlab::cli::ChildResult one = oomlab_with({"slabs", "--trace", trace.string()});
  ASSERT_EQ(one.exit_code, oomlab::cli::kExitOk) << one.err_tail;
  EXPECT_NE(one.out.find("at most 6 slabs of 1 MiB live at once (line 4): 6 MiB"),
            std::string::npos)
      << one.out;
  const oomlab::cli::ChildResult two =
      oomlab_with({"slabs", "--trace", trace.string(), "--slab-mib", "2"});
  EXPECT_NE(two.out.find("at most 3 slabs of 2 MiB"), std::string::npos) << two.out;

  EXPECT_EQ(oomlab_with({"slabs"}).exit_code, oomlab::cli::kExitUsage) << "--trace is required";
  EXPECT_EQ(oomlab_with({"slabs", "--trace", trace.string(), "--slab-mib", "0"}).exit_code,
            oomlab::cli::kExitUsage);
}

// Its backend brings its granularity (1 MiB slabs) and its OOM is its own: the OOM record's
// source is `slab`, never the driver's; the largest free piece is said to Toy's resolution; a
// frontier on it is found to 1 MiB; and a saved run re-read says the same.
TEST(ArchitectureGuideFramework, ItsBackendsOomIsItsOwnAtItsGranularity) {
  const fs::path trace = toy_trace("granularity");
  // Two 2 MiB slabs of 5 MiB: 1 MiB left, which no slab fits in.
  const json slab = replay(trace, "slab:slab=2MiB", "5MiB");
  ASSERT_TRUE(slab.is_object());
  EXPECT_EQ(slab["oom"]["source"], "slab") << slab["oom"].dump(1);
  EXPECT_EQ(slab["oom"]["granularity_bytes"], 1048576);
  EXPECT_EQ(slab["oom"]["largest_free_bytes"], 0);

  const fs::path out = oomlab::testing::fresh_temp_folder("toy_framework_granularity_run") / "r";
  const oomlab::cli::ChildResult run =
      oomlab_with({"run", "replay", "--trace", trace.string(), "-a", "slab:slab=2MiB", "--budget",
                   "5MiB", "--out", out.string()});
  EXPECT_NE(run.out.find("under 1.00 MiB in one block"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(slab, simulated)"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("driver"), std::string::npos) << run.out;
  const oomlab::cli::ChildResult report = oomlab_with({"report", out.string()});
  ASSERT_EQ(report.exit_code, oomlab::cli::kExitOk) << report.err_tail;
  std::ifstream markdown(out / "report.md");
  const std::string written((std::istreambuf_iterator<char>(markdown)),
                            std::istreambuf_iterator<char>());
  EXPECT_NE(written.find("under 1.00 MiB"), std::string::npos) << written;

  const oomlab::cli::ChildResult frontier =
      oomlab_with({"frontier", "replay", "--trace", trace.string(), "-a", "slab", "--json", "-"});
  ASSERT_EQ(frontier.exit_code, oomlab::cli::kExitOk) << frontier.err_tail;
  const json f = json::parse(frontier.out);
  EXPECT_EQ(f["resolution_bytes"], 1048576) << f.dump(1);
  EXPECT_EQ(f["frontier_bytes"], 6 * 1048576) << "three blocks of two 1 MiB slabs";
}

}  // namespace
