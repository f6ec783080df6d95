// Named cards: --budget takes a card's name as people type it, resolves it to the card's NVML
// total less what the device in hand keeps back (on the sim, the H100's measured figure, which on
// an idle H100 gives exactly the free memory NVML recorded there), says that it approximates the
// card, and `list --cards` and the searches' answers name the cards.
#include "device/cards.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/parse.hpp"
#include "oomlab/error.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using json = nlohmann::json;

using Cli = ::oomlab::testing::CliRun;

Cli oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

TEST(Cards, TheBudgetTakesACardAsPeopleTypeIt) {
  for (const auto& [typed, name] :
       std::vector<std::pair<std::string, std::string>>{{"T4", "T4"},
                                                        {"h100", "H100-80GB"},
                                                        {"H100 80GB", "H100-80GB"},
                                                        {"a100-80gb", "A100-80GB"},
                                                        {"rtx4090", "RTX4090"},
                                                        {"H200", "H200"}}) {
    const BudgetRequest b = cli::parse_budget(typed);
    ASSERT_EQ(b.kind, BudgetRequest::Kind::card) << typed;
    EXPECT_EQ(b.card->name, name) << typed;
  }
  try {
    static_cast<void>(cli::parse_budget("A100"));
    ADD_FAILURE() << "A100 is two cards";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cli::parse_budget("8GiB").kind, BudgetRequest::Kind::bytes) << "sizes stay sizes";
}

TEST(Cards, TheTableIsSortedAndEveryFigureHasItsSource) {
  std::uint64_t last = 0;
  for (const Card& c : known_cards()) {
    EXPECT_GE(c.total_bytes, last) << c.name;
    last = c.total_bytes;
    EXPECT_FALSE(c.source.empty()) << c.name;
    EXPECT_LT(c.total_bytes, 160_GiB) << c.name;
  }
}

TEST(Cards, AnIdleH100OfTheTableGivesTheFreeMemoryMeasuredOnOne) {
  // ci/baselines: NVML's free memory on the idle H100 here, before any run.
  const std::string path =
      testing::test_data_dir() + "/../../ci/baselines/nvidia-h100-80gb-hbm3-580.json";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no repository beside the test data: " << path;
  const json baseline = json::parse(in);
  const std::uint64_t measured_free = baseline.at("environment").at("device").at("free_bytes");
  const Card* h100 = card_named("H100-80GB");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(card_budget_bytes(*h100, kept_back_bytes(nullptr)), measured_free);
  const DeviceFacts here{.free_bytes = 70_GiB, .nvml_total_bytes = 80_GiB};
  EXPECT_EQ(kept_back_bytes(&here), 10_GiB) << "the device in hand's own figure when NVML says";
}

TEST(Cards, OnTheSimACardIsItsBudgetWithANoticeThatItApproximates) {
  const Cli r = oomlab({"run", "leak", "-a", "sim", "--budget", "L4", "-p", "steps=4", "--no-out",
                        "--json", "-", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("budget_bytes"), 23'034_MiB - kIdleKeptBackH100);
  EXPECT_NE(r.err.find("budget L4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("approximates the card"), std::string::npos) << r.err;
  // A card larger than the simulated one (80 GiB by default) is still the card asked about.
  const Cli h200 = oomlab({"run", "leak", "-a", "sim", "--budget", "H200", "-p", "steps=4",
                           "--no-out", "--json", "-", "-q"});
  ASSERT_EQ(h200.code, 0) << h200.err;
  EXPECT_EQ(json::parse(h200.out).at("budget_bytes"), 143'771_MiB - kIdleKeptBackH100);
}

TEST(Cards, ListCardsGivesEachCardItsBudgetAndSource) {
  const Cli text = oomlab({"list", "--cards"});
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("A100-80GB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("approximates the card"), std::string::npos) << text.out;
  const Cli as_json = oomlab({"list", "--cards", "--json"});
  ASSERT_EQ(as_json.code, 0);
  const json doc = json::parse(as_json.out);
  ASSERT_EQ(doc.at("cards").size(), known_cards().size());
  EXPECT_EQ(doc.at("cards").at(0).at("name"), "T4");
  EXPECT_EQ(doc.at("cards").at(0).at("budget_bytes"), 15'360_MiB - kIdleKeptBackH100);
}

TEST(Cards, AFrontierSaysWhichCardsHoldIt) {
  const Cli r = oomlab({"frontier", "leak", "-a", "sim", "-p", "steps=50", "-p", "leak=256MiB",
                        "--budget", "40GiB", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(r.out);
  const std::uint64_t frontier = doc.at("frontier_bytes");
  std::vector<std::string> expected;
  for (const Card& c : known_cards()) {
    if (card_budget_bytes(c, kIdleKeptBackH100) >= frontier) expected.emplace_back(c.name);
  }
  ASSERT_FALSE(expected.empty());
  ASSERT_LT(expected.size(), known_cards().size()) << "a frontier some cards do not hold";
  EXPECT_EQ(doc.at("cards").get<std::vector<std::string>>(), expected);
  EXPECT_NE(r.err.find("cards that hold"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace oomlab
