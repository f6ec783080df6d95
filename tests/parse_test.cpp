// The CLI's parsers: every unit and spelling a user may type, and every mistake refused with a
// message that names the value.
#include "cli/parse.hpp"

#include <gtest/gtest.h>

#include "oomlab/error.hpp"

namespace oomlab::cli {
namespace {

using namespace oomlab::literals;

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  ADD_FAILURE() << "no usage error thrown";
  return {};
}

TEST(ParseSize, AcceptsIecSiAndShorthandUnits) {
  EXPECT_EQ(parse_size("512").value, 512U);
  EXPECT_EQ(parse_size("512B").value, 512U);
  EXPECT_EQ(parse_size("64KiB").value, 64_KiB);
  EXPECT_EQ(parse_size("64k").value, 64_KiB);
  EXPECT_EQ(parse_size("8GiB").value, 8_GiB);
  EXPECT_EQ(parse_size("8G").value, 8_GiB);
  EXPECT_EQ(parse_size("8gib").value, 8_GiB);
  EXPECT_EQ(parse_size("8 GiB").value, 8_GiB);
  EXPECT_EQ(parse_size("1.5GB").value, 1'500'000'000U);
  EXPECT_EQ(parse_size("1.5GiB").value, 1536_MiB);
  EXPECT_EQ(parse_size("2TB").value, 2'000'000'000'000U);
  EXPECT_EQ(parse_size("0").value, 0U);
}

// Notes print sizes up to EiB (format_bytes): every unit printed is one the parser takes back.
TEST(ParseSize, ReadsBackEveryUnitSizesArePrintedIn) {
  EXPECT_EQ(parse_size("1EiB").value, 1ULL << 60U);
  EXPECT_EQ(parse_size("2PiB").value, 2ULL << 50U);
  EXPECT_EQ(parse_size("1.5E").value, 3ULL << 59U);
  EXPECT_EQ(parse_size("3PB").value, 3'000'000'000'000'000U);
  EXPECT_EQ(parse_size("15EiB").value, 15ULL << 60U);
  EXPECT_EQ(parse_budget("1EiB").bytes.value, 1ULL << 60U);
  for (const char* over : {"16EiB", "16.0EiB", "19EB"}) {
    const std::string message = usage_error([&] { (void)parse_size(over); });
    EXPECT_NE(message.find("is too large a size: the largest is 16 EiB less one byte"),
              std::string::npos)
        << over << ": " << message;
  }
}

TEST(ParseSize, IsExactWhereFloatingPointWouldNotBe) {
  EXPECT_EQ(parse_size("0.1GB").value, 100'000'000U);
  EXPECT_EQ(parse_size("0.5KiB").value, 512U);
  EXPECT_EQ(parse_size("1.25MiB").value, 1'310'720U);
  EXPECT_EQ(parse_size("0.001KB").value, 1U);
  EXPECT_EQ(parse_size("18446744073709551615").value, UINT64_MAX);
}

TEST(ParseSize, RefusesBadValuesNamingThem) {
  EXPECT_NE(usage_error([] { (void)parse_size("-1"); }).find("negative"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("8XB"); }).find("unknown unit 'XB'"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("1e400"); }).find("1e400"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size(""); }).find("empty"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("GiB"); }).find("not a size"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("18446744073709551616"); }).find("too large"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("17179869184GiB"); }).find("too large"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("1.5"); }).find("whole number of bytes"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_size("1..5G"); }).find("unknown unit"), std::string::npos);
}

TEST(ParseBudget, SizePercentAndAll) {
  EXPECT_EQ(parse_budget("8GiB").kind, BudgetRequest::Kind::bytes);
  EXPECT_EQ(parse_budget("8GiB").bytes.value, 8_GiB);
  EXPECT_EQ(parse_budget("25%").kind, BudgetRequest::Kind::percent);
  EXPECT_DOUBLE_EQ(parse_budget("12.5%").percent.value, 12.5);
  EXPECT_EQ(parse_budget("all").kind, BudgetRequest::Kind::all);
  EXPECT_EQ(parse_budget("ALL").kind, BudgetRequest::Kind::all);
}

TEST(ParseBudget, RefusesZeroAndOutOfRangePercentages) {
  EXPECT_NE(usage_error([] { (void)parse_budget("0"); }).find("0 bytes"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_budget("101%"); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_budget("0%"); }).find("out of range"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_budget("-5%"); }).find("not a percentage"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_budget("abc%"); }).find("not a percentage"),
            std::string::npos);
}

TEST(ParseFraction, RatiosAndDecimalsReduced) {
  EXPECT_EQ(parse_fraction("1/32"), (Fraction{1, 32}));
  EXPECT_EQ(parse_fraction("2/8"), (Fraction{1, 4}));
  EXPECT_EQ(parse_fraction("0.25"), (Fraction{1, 4}));
  EXPECT_EQ(parse_fraction("1"), (Fraction{1, 1}));
  EXPECT_EQ(parse_fraction("0"), (Fraction{0, 1}));
  EXPECT_NE(usage_error([] { (void)parse_fraction("1/0"); }).find("denominator"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_fraction("3/2"); }).find("more than 1"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_fraction("x"); }).find("not a fraction"),
            std::string::npos);
}

TEST(ParseScalars, FlagsIntegersAndReals) {
  EXPECT_TRUE(parse_flag("on"));
  EXPECT_TRUE(parse_flag("TRUE"));
  EXPECT_FALSE(parse_flag("off"));
  EXPECT_FALSE(parse_flag("0"));
  EXPECT_EQ(parse_integer("-3"), -3);
  EXPECT_EQ(parse_unsigned("18446744073709551615"), UINT64_MAX);
  EXPECT_DOUBLE_EQ(parse_real("0.5"), 0.5);
  EXPECT_NE(usage_error([] { (void)parse_flag("maybe"); }).find("on or off"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_unsigned("-1"); }).find("negative"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_integer("12abc"); }).find("whole number"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_real("1e400"); }).find("1e400"), std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_real("nan"); }).find("finite"), std::string::npos);
}

TEST(ParseAllocator, NameWithTypedOptions) {
  const AllocatorChoice plain = parse_allocator("async");
  EXPECT_EQ(plain.kind, BackendKind::async);
  EXPECT_EQ(plain.options.bytes("release_threshold"), 0U);
  EXPECT_TRUE(plain.options.flag("reuse_opportunistic"));

  const AllocatorChoice tuned =
      parse_allocator("async:release_threshold=max,reuse_opportunistic=off");
  EXPECT_EQ(tuned.options.bytes("release_threshold"), UINT64_MAX);
  EXPECT_FALSE(tuned.options.flag("reuse_opportunistic"));
  EXPECT_TRUE(tuned.options.was_set("reuse_opportunistic"));

  EXPECT_EQ(parse_allocator("sim:page=64KiB").options.bytes("page"), 64_KiB);
  EXPECT_EQ(parse_allocator("managed:advise=read-mostly").options.choice("advise"), "read-mostly");
}

TEST(ParseAllocator, UnknownNamesAndOptionsSuggestTheClosest) {
  EXPECT_NE(usage_error([] { (void)parse_allocator("asnyc"); }).find("did you mean 'async'"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              (void)parse_allocator("async:release_treshold=0");
            }).find("did you mean 'release_threshold'"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_allocator("cuda:x=1"); }).find("takes no parameters"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_allocator("async:"); }).find("no options"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              (void)parse_allocator("managed:advise=read-mostyl");
            }).find("did you mean 'read-mostly'"),
            std::string::npos);
  EXPECT_NE(usage_error([] { (void)parse_allocator("sim:page=8XB"); }).find("--allocator page"),
            std::string::npos);
}

TEST(ParseParams, DefaultsTypedValuesAndMistakes) {
  const ParamSpec spec = {
      {.name = "block", .type = ParamType::bytes, .default_value = Bytes{64_KiB}, .help = ""},
      {.name = "steps",
       .type = ParamType::integer,
       .default_value = std::int64_t{10},
       .help = "",
       .min_integer = 1},
  };
  const Params p = parse_params(spec, {"block=1MiB"}, "scenario 'x'", "--param");
  EXPECT_EQ(p.bytes("block"), 1_MiB);
  EXPECT_EQ(p.integer("steps"), 10);
  EXPECT_NE(usage_error([&] {
              (void)parse_params(spec, {"blok=1"}, "scenario 'x'", "--param");
            }).find("did you mean 'block'"),
            std::string::npos);
  EXPECT_NE(
      usage_error([&] { (void)parse_params(spec, {"block"}, "s", "--param"); }).find("key=value"),
      std::string::npos);
  EXPECT_NE(usage_error([&] {
              (void)parse_params(spec, {"block=1", "block=2"}, "s", "--param");
            }).find("given twice"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              (void)parse_params(spec, {"steps=0"}, "s", "--param");
            }).find("least allowed"),
            std::string::npos);
}

TEST(ClosestName, OnlySuggestsWhatIsClose) {
  EXPECT_EQ(closest_name("fragmentaton", {"fragmentation", "leak"}), "fragmentation");
  EXPECT_EQ(closest_name("zzzzzz", {"fragmentation", "leak"}), "");
}

}  // namespace
}  // namespace oomlab::cli
