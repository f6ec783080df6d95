// --budget as every command reads it: a size that is not a whole number of bytes rounded to the
// page, an SI size read as written with a note asking whether the IEC one was meant, and whatif
// taking N%, all and a huge budget as run does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/parse.hpp"
#include "oomlab/error.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;

using Cli = ::oomlab::testing::CliRun;

Cli oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

bool has_note(const BudgetReading& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// "a100" is one letter from A10G, but whoever typed it meant one of the A100s.
TEST(BudgetText, AMistypedCardSuggestsTheCardsItsNameBegins) {
  const Cli a100 = oomlab({"run", "fragmentation", "-a", "sim", "--budget", "a100", "--no-out"});
  EXPECT_EQ(a100.code, 2) << a100.err;
  EXPECT_NE(a100.err.find("(did you mean 'A100-40GB' or 'A100-80GB'?)"), std::string::npos)
      << a100.err;
  EXPECT_EQ(a100.err.find("A10G"), std::string::npos) << a100.err;
  const Cli t5 = oomlab({"run", "fragmentation", "-a", "sim", "--budget", "T5", "--no-out"});
  EXPECT_EQ(t5.code, 2) << t5.err;
  EXPECT_NE(t5.err.find("(did you mean 'T4'?)"), std::string::npos) << t5.err;
}

// Notes print sizes in EiB: such a budget is read, and clamped as any budget over the card.
// No card holds an exbibyte: past the largest card the sim models (16 TiB) a budget is refused
// with one line, never modelled as something else.
TEST(BudgetText, AnExbibyteBudgetIsRefusedAsNoCard) {
  const Cli r = oomlab({"run", "fragmentation", "-a", "sim", "--budget", "1EiB", "--no-out"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no card holds 1.00 EiB"), std::string::npos) << r.err;
}

// A budget larger than the default modelled card (80 GiB) is the card asked about: a 200 GiB
// budget is modelled as 200 GiB, where a card named with 'total' stays that card.
TEST(BudgetText, ABudgetOverTheDefaultCardIsModelledAsGiven) {
  const std::string job =
      (fs::path(testing::test_data_dir()) / "pytorch" / "infer_varlen_native.pickle").string();
  const Cli big = oomlab({"run", "replay", "--trace", job, "-a", "torch", "--budget", "200GiB",
                          "--no-out", "--json", "-"});
  ASSERT_EQ(big.code, 0) << big.err;
  const nlohmann::json doc = nlohmann::json::parse(big.out);
  EXPECT_EQ(doc.at("budget_bytes").get<std::uint64_t>(), 200_GiB);
  EXPECT_EQ(doc.at("allocator").at("options").at("total").get<std::uint64_t>(), 200_GiB);
  EXPECT_EQ(big.err.find("clamped"), std::string::npos) << big.err;
  const Cli capped = oomlab({"run", "replay", "--trace", job, "-a", "sim:total=40GiB", "--budget",
                             "200GiB", "--no-out", "--json", "-"});
  ASSERT_EQ(capped.code, 0) << capped.err;
  EXPECT_EQ(nlohmann::json::parse(capped.out).at("budget_bytes").get<std::uint64_t>(), 40_GiB);
  EXPECT_NE(capped.err.find("clamped to 40.0 GiB"), std::string::npos) << capped.err;
}

// 1.9 GiB is 1,945.6 MiB: the nearest 2 MiB page ends at 1,946 MiB.
TEST(BudgetText, AFractionOfAByteIsRoundedToTheNearestPageWithANote) {
  const BudgetReading r = read_budget("1.9GiB");
  ASSERT_EQ(r.request.kind, BudgetRequest::Kind::bytes);
  EXPECT_EQ(r.request.bytes.value, 1946_MiB);
  ASSERT_EQ(r.notes.size(), 1U);
  EXPECT_NE(r.notes[0].find("1.9GiB is not a whole number of bytes"), std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[0].find("2,040,528,896 B"), std::string::npos) << r.notes[0];
  EXPECT_EQ(parse_budget("1.9GiB").bytes.value, 1946_MiB);
  EXPECT_EQ(read_budget("0.0000001GiB").request.bytes.value, 2_MiB) << "never below one page";
  // Whole bytes stay exactly as written, without a note; other sizes stay exact.
  EXPECT_EQ(read_budget("1000000").request.bytes.value, 1'000'000U);
  EXPECT_TRUE(read_budget("1.5GiB").notes.empty());
  EXPECT_THROW((void)parse_size("1.9GiB"), Error);
}

TEST(BudgetText, AnSiSizeSaysWhatItWasReadAsAndAsksWhetherIecWasMeant) {
  const BudgetReading gb = read_budget("8GB");
  EXPECT_EQ(gb.request.bytes.value, 8'000'000'000U) << "read as written";
  EXPECT_TRUE(has_note(gb, "8GB is read as 8,000,000,000 B")) << gb.notes.front();
  EXPECT_TRUE(has_note(gb, "did you mean 8GiB (8,589,934,592 B)?")) << gb.notes.front();
  EXPECT_TRUE(has_note(read_budget("512MB"), "did you mean 512MiB (536,870,912 B)?"));
  EXPECT_TRUE(has_note(read_budget("2tb"), "did you mean 2TiB (2,199,023,255,552 B)?"));
  // 1.3 GiB is no whole number of bytes: the suggestion without its bytes.
  EXPECT_TRUE(has_note(read_budget("1.3GB"), "did you mean 1.3GiB?"));
  for (const char* quiet : {"8GiB", "8G", "8192MiB", "25%", "all", "64KB"})
    EXPECT_TRUE(read_budget(quiet).notes.empty()) << quiet;
}

TEST(BudgetText, RunPrintsTheNoteAndRunsAtTheRoundedBudget) {
  const Cli r = oomlab(
      {"run", "fragmentation", "-a", "sim", "--budget", "1.9GiB", "--no-out", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("budget_bytes"), 1946_MiB);
  EXPECT_NE(r.err.find("oomlab: note: --budget: 1.9GiB is not a whole number of bytes"),
            std::string::npos)
      << r.err;
}

const fs::path kJob = fs::path(testing::test_data_dir()) / "pytorch" / "grow_native.pickle";

// whatif's budget, from whatif.json, after a run with `budget`.
struct WhatIfBudget {
  Cli cli;
  std::uint64_t bytes = 0;
  std::vector<std::string> notes;
};

WhatIfBudget whatif_at(const std::string& budget) {
  const fs::path json = fs::temp_directory_path() / "oomlab_budget_text_test_whatif.json";
  WhatIfBudget w{.cli = oomlab({"whatif", "--trace", kJob.string(), "--budget", budget, "--json",
                                json.string(), "--quiet"})};
  if (w.cli.code != 0) return w;
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  w.bytes = doc.at("budget_bytes").get<std::uint64_t>();
  w.notes = doc.at("notes").get<std::vector<std::string>>();
  return w;
}

// The modelled card is 80 GiB (the job's snapshot records no budget of its own).
TEST(BudgetText, WhatIfTakesPercentAndAllOfItsCardAsRunDoes) {
  const WhatIfBudget half = whatif_at("50%");
  ASSERT_EQ(half.cli.code, 0) << half.cli.err;
  EXPECT_EQ(half.bytes, 40_GiB);
  const WhatIfBudget all = whatif_at("all");
  ASSERT_EQ(all.cli.code, 0) << all.cli.err;
  EXPECT_EQ(all.bytes, 80_GiB);
}

// Past the largest card the sim can model (16 TiB) no card could be: refused, not clamped.
TEST(BudgetText, WhatIfRefusesABudgetNoCardHolds) {
  const WhatIfBudget huge = whatif_at("1000TiB");
  EXPECT_EQ(huge.cli.code, 2) << huge.cli.err;
  EXPECT_NE(huge.cli.err.find("no card holds 1000 TiB"), std::string::npos) << huge.cli.err;
  const WhatIfBudget big = whatif_at("16TiB");
  ASSERT_EQ(big.cli.code, 0) << big.cli.err;
  EXPECT_EQ(big.bytes, 16_TiB);
  const WhatIfBudget si = whatif_at("8GB");
  ASSERT_EQ(si.cli.code, 0) << si.cli.err;
  EXPECT_EQ(si.bytes, 8'000'000'000U);
  EXPECT_NE(si.cli.err.find("oomlab: note: --budget: 8GB is read as 8,000,000,000 B"),
            std::string::npos)
      << si.cli.err;
}

}  // namespace
}  // namespace oomlab::cli
