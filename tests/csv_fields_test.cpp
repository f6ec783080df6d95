// The CSV readers' one-pass field readers: the same values as the string_view readers, and the
// same one-line "file:line: column: what" errors for what they refuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using trace::Place;

const fs::path kFile = "log.csv";

// The message a field reader throws, or "" when it accepts the field.
template <typename Read>
std::string refusal(Read read, const std::string& field) {
  try {
    (void)read(field.c_str(), Place{kFile, 7, "Col"});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  return "";
}

std::uint64_t hex(const char* field) {
  return trace::read_hex_field(field, {kFile, 1, "P"});
}
std::uint64_t dec(const char* field) {
  return trace::read_decimal_field(field, {kFile, 1, "T"});
}
std::uint64_t size(const char* field) {
  return trace::read_size_field(field, {kFile, 1, "S"});
}
std::uint64_t clock(const char* field) {
  return trace::read_clock_field(field, {kFile, 1, "C"});
}

TEST(CsvFields, HexPointersWithOrWithoutPrefixAnyCaseAndNil) {
  EXPECT_EQ(hex("0x7f4c2a000000"), 0x7f4c2a000000U);
  EXPECT_EQ(hex("7F8A38001020"), 0x7f8a38001020U);
  EXPECT_EQ(hex("0X0"), 0U);
  EXPECT_EQ(hex("0xffffffffffffffff"), UINT64_MAX) << "16 digits: the largest";
  EXPECT_EQ(hex("0x00000000000000001"), 1U) << "17 digits with leading zeros still fit";
  EXPECT_EQ(hex("(nil)"), 0U);
}

TEST(CsvFields, BadHexIsRefusedWithItsPlace) {
  const auto read = trace::read_hex_field;
  EXPECT_EQ(refusal(read, "0xZZ"), "log.csv:7: Col: '0xZZ' is not a hexadecimal address");
  EXPECT_NE(refusal(read, "0x"), "");
  EXPECT_NE(refusal(read, ""), "");
  EXPECT_NE(refusal(read, "0x12g"), "");
  EXPECT_NE(refusal(read, "0x0x12"), "");
  EXPECT_NE(refusal(read, "0x10000000000000000"), "") << "17 significant digits: past 64 bits";
}

TEST(CsvFields, DecimalsUpTo64Bits) {
  EXPECT_EQ(dec("140201349764864"), 140201349764864U);
  EXPECT_EQ(dec("0"), 0U);
  EXPECT_EQ(dec("18446744073709551615"), UINT64_MAX) << "20 digits: the slow path takes it";
  const auto read = trace::read_decimal_field;
  EXPECT_EQ(refusal(read, "18446744073709551616"),
            "log.csv:7: Col: '18446744073709551616' is out of range");
  EXPECT_EQ(refusal(read, "12a"), "log.csv:7: Col: '12a' is not a number");
  EXPECT_EQ(refusal(read, ""), "log.csv:7: Col: '' is not a number");
  EXPECT_EQ(refusal(read, "+1"), "log.csv:7: Col: '+1' is not a number");
}

TEST(CsvFields, SizesUpTo64PiB) {
  EXPECT_EQ(size("1048576"), 1048576U);
  EXPECT_EQ(size("72057594037927936"), trace::kLargestSize);
  const auto read = trace::read_size_field;
  EXPECT_EQ(refusal(read, "72057594037927937"),
            "log.csv:7: Col: 72057594037927937 bytes is not a size any allocator has");
  EXPECT_EQ(refusal(read, "-64"), "log.csv:7: Col: '-64' is a negative size");
  EXPECT_EQ(refusal(read, "64 "), "log.csv:7: Col: '64 ' is not a number");
}

TEST(CsvFields, TimesOfDayToNanoseconds) {
  EXPECT_EQ(clock("12:34:56.789012"), ((12 * 60 + 34) * 60 + 56) * 1'000'000'000ULL + 789'012'000);
  EXPECT_EQ(clock("00:00:00.5"), 500'000'000U) << "a short fraction is tenths";
  EXPECT_EQ(clock("23:59:60.123456789999"), (86'400ULL * 1'000'000'000) + 123'456'789)
      << "a leap second; digits past the ninth ignored";
  EXPECT_EQ(clock("10:00:00"), 36'000'000'000'000U) << "no fraction";
  EXPECT_EQ(clock("1700000000.25"), 1'700'000'000'250'000'000U) << "seconds since the epoch";
}

TEST(CsvFields, BadTimesAreRefusedWithTheirPlace) {
  const auto read = trace::read_clock_field;
  EXPECT_EQ(refusal(read, "24:00:00.000000"),
            "log.csv:7: Col: '24:00:00.000000' is not a time of day");
  EXPECT_EQ(refusal(read, "10:60:00.000000"),
            "log.csv:7: Col: '10:60:00.000000' is not a time of day");
  EXPECT_EQ(refusal(read, "10:00:00.12x"), "log.csv:7: Col: '12x' is not a number");
  EXPECT_EQ(refusal(read, "10:00:00."), "log.csv:7: Col: '' is not a number");
  EXPECT_EQ(refusal(read, "10:0"), "log.csv:7: Col: '10:0' is not a number");
  EXPECT_EQ(refusal(read, "99999999999"), "log.csv:7: Col: '99999999999' is not a time");
  EXPECT_EQ(refusal(read, ""), "log.csv:7: Col: '' is not a number");
}

}  // namespace
}  // namespace oomlab
