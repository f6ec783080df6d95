// CLI11's own complaints, retold in oomlab's one-line style: the command named, the closest of its
// own options suggested, no CLI11 phrasing left, and any echoed argument cut at 200 characters.
#include "cli/cli_messages.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "cli/cli.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

using Outcome = ::oomlab::testing::CliRun;

Outcome oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

struct Retold {
  std::vector<std::string> args;
  std::string expected;  // the whole line after "oomlab: error: "
};

class CliRetells : public ::testing::TestWithParam<Retold> {};

TEST_P(CliRetells, CliElevensMessageInOomlabsWords) {
  const Outcome o = oomlab(GetParam().args);
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "oomlab: error: " + GetParam().expected + "\n");
  EXPECT_EQ(o.out, "");
  for (const char* phrase : {"At Most", "At least", "The following argument", "required TEXT",
                             "Could not convert", "excludes"}) {
    EXPECT_EQ(o.err.find(phrase), std::string::npos) << phrase;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ParseErrors, CliRetells,
    ::testing::Values(
        Retold{{"run", "fragmentation", "--budgt", "1GiB"},
               "run: unknown option '--budgt' (did you mean '--budget'?) (see oomlab run --help)"},
        Retold{{"run", "fragmentation", "--alocator=sim"},
               "run: unknown option '--alocator' (did you mean '--allocator'?) (see oomlab run "
               "--help)"},
        Retold{{"matrix", "--scenario", "leak"},
               "matrix: unknown option '--scenario' (did you mean '--scenarios'?) (see oomlab "
               "matrix --help)"},
        Retold{{"frontier", "leak", "--tiemout", "5"},
               "frontier: unknown option '--tiemout' (did you mean '--timeout'?) (see oomlab "
               "frontier --help)"},
        Retold{{"--verison"},
               "unknown option '--verison' (did you mean '--version'?) (see oomlab "
               "--help)"},
        Retold{{"run", "fragmentation", "--budget=all", "--budget=1GiB"},
               "run: --budget is given 2 times; give it once (see oomlab run --help)"},
        Retold{{"run", "fragmentation", "--budget"},
               "run: --budget needs a value (see oomlab run --help)"},
        Retold{{"run", "fragmentation", "leak"},
               "run: unexpected argument 'leak': oomlab run takes SCENARIO and options (see "
               "oomlab run --help)"},
        Retold{{"list", "extra"},
               "list: unexpected argument 'extra': oomlab list takes no arguments, only options "
               "(see oomlab list --help)"},
        Retold{{"run"},
               "run: scenario is required: oomlab run takes SCENARIO and options (see oomlab run "
               "--help)"},
        Retold{{"compare", "a.json"},
               "compare: current is required: oomlab compare takes BASELINE CURRENT and options "
               "(see oomlab compare --help)"},
        Retold{{"run", "fragmentation", "--expect-oom", "--expect-no-oom"},
               "run: --expect-oom and --expect-no-oom cannot be given together (see oomlab run "
               "--help)"},
        Retold{{"run", "fragmentation", "--strict=maybe"},
               "run: --strict is a flag and takes no value ('maybe' given) (see oomlab run "
               "--help)"}));

TEST(CliRetells, AnOptionWithNoCloseNameGetsTheCommandsOptionsListed) {
  const Outcome o = oomlab({"compare", "a.json", "b.json", "--force"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err.rfind("oomlab: error: compare: unknown option '--force' (compare takes --help -h "
                        "--tolerance --json --markdown --junit",
                        0),
            0U)
      << o.err;
}

TEST(CliRetells, AnUnknownOptionIsNamedBeforeAMissingArgument) {
  const Outcome o = oomlab({"run", "--bogus"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("run: unknown option '--bogus'"), std::string::npos) << o.err;
}

TEST(CliRetells, AnEchoedArgumentIsCutAtTwoHundredCharacters) {
  const std::string long_name(5000, 'x');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "fragmentation", "--" + long_name},
        std::vector<std::string>{"run", long_name}, std::vector<std::string>{long_name},
        std::vector<std::string>{"run", "fragmentation", "--budget", long_name},
        std::vector<std::string>{"run", "fragmentation", "extra" + long_name}}) {
    const Outcome o = oomlab(args);
    EXPECT_EQ(o.code, 2);
    EXPECT_LT(o.err.size(), 700U) << o.err.substr(0, 300);
    EXPECT_NE(o.err.find(std::string(190, 'x') + "...["), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
  }
}

TEST(ClipLongWords, CutsOnlyLongRunsAndKeepsTheirClosingQuote) {
  EXPECT_EQ(clip_long_words("unknown scenario 'abc'", 200), "unknown scenario 'abc'");
  EXPECT_EQ(clip_long_words("bad '" + std::string(10, 'a') + "': here", 5),
            "bad 'aaaa...[11 characters]': here");
}

TEST(ClipLongWords, NeverSplitsAUtf8Character) {
  std::string word;
  for (int i = 0; i < 10; ++i)
    word += "\xC3\xA9";  // é, two bytes
  const std::string clipped = clip_long_words(word, 5);
  EXPECT_EQ(clipped, "\xC3\xA9\xC3\xA9...[10 characters]");
}

}  // namespace
}  // namespace oomlab::cli
