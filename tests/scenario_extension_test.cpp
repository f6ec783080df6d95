// RunContext's optional extensions, seen from a context that has none (another harness, a test's
// own): extension<T>() is null, and a scenario that cannot run without one (replay) says which.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "oomlab/error.hpp"
#include "oomlab/program_replay.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/scenario.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

// The least a context must do: every call a scenario may make, and no extension.
class BareContext final : public RunContext {
 public:
  explicit BareContext(Params params) : params_(std::move(params)) {}

  Block allocate(std::size_t bytes, std::string_view /*label*/) override {
    return {nullptr, bytes, AllocStatus::out_of_memory};
  }
  Block try_allocate(std::size_t bytes, std::string_view label) override {
    return allocate(bytes, label);
  }
  void release(Block& block) override { block = Block{}; }
  [[nodiscard]] Stream stream(std::uint32_t /*index*/) override { return {}; }
  Block allocate_on(Stream /*stream*/, std::size_t bytes, std::string_view label) override {
    return allocate(bytes, label);
  }
  void release_on(Stream /*stream*/, Block& block) override { release(block); }
  void touch(const Block& /*block*/) override {}
  void fill(const Block& /*block*/) override {}
  std::uint64_t verify(const Block& /*block*/) override { return 0; }
  void cast(const Block& /*source*/, const Block& /*target*/, Precision /*precision*/) override {}
  void step(std::uint64_t /*n*/) override {}
  void phase(std::string_view /*name*/) override {}
  Rng& rng() override { return rng_; }
  [[nodiscard]] const Params& params() const override { return params_; }
  void metric(std::string_view /*name*/, double /*value*/) override {}
  void note(std::string_view /*text*/) override {}
  [[nodiscard]] bool stop_requested() const override { return false; }
  [[nodiscard]] std::uint64_t budget_bytes() const override { return 0; }
  [[nodiscard]] std::uint64_t live_bytes() const override { return 0; }
  [[nodiscard]] bool simulated() const override { return true; }
  [[nodiscard]] bool oom_recorded() const override { return false; }
  void clear_oom() override {}
  [[nodiscard]] std::uint64_t peak_live_bytes() const override { return 0; }
  void reset_peak() override {}
  [[nodiscard]] LeakEstimate leak_estimate() const override { return {}; }
  std::optional<std::uint64_t> largest_free_bytes() override { return std::nullopt; }

 private:
  Params params_;
  Rng rng_{1};
};

TEST(ScenarioExtension, AContextWithoutOneHasNone) {
  BareContext ctx{Params{}};
  EXPECT_EQ(ctx.extension<ProgramReplay>(), nullptr);
  try {
    static_cast<void>(ctx.required_extension<ProgramReplay>("my-scenario"));
    FAIL() << "required_extension of a missing extension must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("my-scenario needs the run context's 'program-replay'"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScenarioExtension, ReplaySaysItNeedsTheProgramReplayBeforeReplayingAnything) {
  const std::unique_ptr<Scenario> replay = Registry::global().create("replay");
  ASSERT_NE(replay, nullptr);
  Params params(replay->params());
  params.set("trace", testing::test_data_dir() + "/rmm_two_threads_two_streams.csv");
  replay->validate(params);
  replay->prepare(params, [] {});
  BareContext ctx(params);
  try {
    replay->run(ctx);
    FAIL() << "replay ran without a ProgramReplay";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("replay needs the run context's 'program-replay'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace oomlab
