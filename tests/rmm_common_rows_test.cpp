// RMM rows of RMM's own shape, converted in the pass that finds their end (RmmRows::next_common):
// every other row is left whole to the split and the field readers, and a log reads the same,
// values and refusals, whichever path its rows take.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/rng.hpp"
#include "trace/importers.hpp"
#include "trace/rmm_rows.hpp"

namespace oomlab {
namespace {

const std::filesystem::path kName = "rmm.csv";
const std::string kHeader = "Thread,Time,Action,Pointer,Size,Stream\n";

TEST(RmmCommonRows, RmmsOwnRowIsConvertedInOnePass) {
  std::istringstream in(kHeader +
                        "140201349764864,12:34:56.789012,allocate,0x7F4c2a000000,1048576,0x0\n"
                        "2,1700000000.25,allocate failure,(nil),1099511627776,0x5\r\n"
                        "3,00:00:01,free,7f00,64,ab\n");
  trace::RmmRows rows(kName, in);
  trace::RmmRow row;
  ASSERT_TRUE(rows.next_common(row));
  EXPECT_EQ(row.thread, 140201349764864U);
  EXPECT_EQ(row.clock_ns, ((12 * 60 + 34) * 60 + 56) * 1'000'000'000ULL + 789'012'000);
  EXPECT_EQ(row.op, trace::Op::alloc);
  EXPECT_EQ(row.pointer, 0x7f4c2a000000U);
  EXPECT_EQ(row.size, 1048576U);
  EXPECT_EQ(row.stream, 0U);
  EXPECT_EQ(rows.line(), 2U);
  ASSERT_TRUE(rows.next_common(row));
  EXPECT_EQ(row.op, trace::Op::failed);
  EXPECT_EQ(row.clock_ns, 1'700'000'000'250'000'000U);
  EXPECT_EQ(row.pointer, 0U) << "(nil)";
  EXPECT_EQ(row.stream, 5U);
  ASSERT_TRUE(rows.next_common(row));
  EXPECT_EQ(row.op, trace::Op::free);
  EXPECT_EQ(row.pointer, 0x7f00U);
  EXPECT_EQ(row.stream, 0xabU);
  EXPECT_EQ(rows.line(), 4U);
  EXPECT_FALSE(rows.next_common(row)) << "the end";
  std::array<char*, 6> fields{};
  EXPECT_FALSE(rows.next(fields));
}

TEST(RmmCommonRows, AnyOtherRowIsLeftWholeToTheSplit) {
  for (const std::string row :
       {" 1,10:00:00.000001,allocate,0x10,64,0x0", "1,10:00:00.000001,deallocate,0x10,64,0x0",
        "1,10:00:00.000001,allocate,0x10,64,0x0,extra", "1,10:00:00.000001,allocate,0x10,64",
        "18446744073709551615,10:00:00.000001,allocate,0x10,64,0x0",
        "1,10:00:00.1234567891,allocate,0x10,64,0x0", "1,24:00:00.000000,allocate,0x10,64,0x0",
        "1,10:00:00.000001,allocate,0x10,72057594037927937,0x0",
        "1,10:00:00.000001,allocate,0x10,64,0x0\r\r", "", " \t"}) {
    std::istringstream in(kHeader + row + "\n");
    trace::RmmRows rows(kName, in);
    trace::RmmRow common;
    EXPECT_FALSE(rows.next_common(common)) << row;
    EXPECT_EQ(rows.line(), 1U) << "nothing read: " << row;
    std::array<char*, 6> fields{};
    try {
      if (rows.next(fields)) {
        EXPECT_EQ(rows.line(), 2U) << row;
      }
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).substr(0, 10), "rmm.csv:2:") << row;
    }
  }
}

TEST(RmmCommonRows, ColumnsInAnotherOrderAlwaysTakeTheSplit) {
  std::istringstream in("Time,Thread,Action,Pointer,Size,Stream\n10:00:00.000001,1,free,0x1,1,0\n");
  trace::RmmRows rows(kName, in);
  trace::RmmRow common;
  EXPECT_FALSE(rows.next_common(common));
  std::array<char*, 6> fields{};
  ASSERT_TRUE(rows.next(fields));
  EXPECT_STREQ(fields[1], "10:00:00.000001");
}

std::string clock_text(std::uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "10:%02llu:%02llu.%06llu",
                static_cast<unsigned long long>(us / 60'000'000 % 60),
                static_cast<unsigned long long>(us / 1'000'000 % 60),
                static_cast<unsigned long long>(us % 1'000'000));
  return text;
}

// A field: RMM's own shape, or (with probability `odd`) one of the shapes a log may hold, good
// or bad.
std::string pick(Rng& rng, double odd, const std::vector<std::string>& others,
                 const std::string& usual) {
  return rng.chance(odd) ? others[rng.uniform(0, others.size() - 1)] : usual;
}

std::string random_row(Rng& rng, double odd, std::uint64_t us) {
  const std::string thread = pick(rng, odd,
                                  {"1", "0042", "9999999999999999999", "18446744073709551615",
                                   "18446744073709551616", "+1", "12a", "", " 7 "},
                                  rng.chance(0.5) ? "140201349764864" : "140201341372160");
  const std::string time =
      pick(rng, odd,
           {"10:00:00", "10:00:00.5", "10:00:00.123456789", "10:00:00.1234567891",
            "23:59:60.999999", "24:00:00.000000", "10:60:00.000001", "1700000000.25", "99999999999",
            "10:0", "", "\t10:00:00.000001"},
           clock_text(us));
  const std::string action =
      pick(rng, odd, {"deallocate", "allocate failure", "alloc", " free", "Free", ""},
           rng.chance(0.5) ? "allocate" : "free");
  const std::string pointer =
      pick(rng, odd,
           {"0X7F00AB", "7f00ab", "(nil)", "0xffffffffffffffff", "0x00000000000000001",
            "0x10000000000000000", "0x", "0xZZ", "", " 0x10 "},
           "0x7f4c2a" + std::to_string(100000 + rng.uniform(0, 15)));
  const std::string size = pick(rng, odd,
                                {"0", "72057594037927936", "72057594037927937", "+1",
                                 "123456789012345678901", "-64", "64 ", ""},
                                std::to_string(rng.uniform(1, 1U << 20U)));
  const std::string stream = pick(rng, odd, {"0", "0x5", "7F", "", "0xg", "0x0 "}, "0x0");
  std::string row = thread + "," + time + "," + action + "," + pointer + "," + size + "," + stream;
  if (rng.chance(odd / 4)) row += ",extra";
  if (rng.chance(odd / 4)) row.resize(row.rfind(','));
  if (rng.chance(odd / 4)) row = rng.chance(0.5) ? "" : "  ";
  return row + (rng.chance(0.1) ? "\r\n" : "\n");
}

// The same log with a seventh column in the header and in every row that is not blank: no row
// can then take the common path, and every value and refusal comes from the field readers.
std::string with_extra_column(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end;
    std::size_t content = end > at && text[end - 1] == '\r' ? end - 1 : end;
    const std::string line = text.substr(at, content - at);
    out += line;
    if (line.find_first_not_of(" \t") != std::string::npos) out += at == 0 ? ",Extra" : ",x";
    out += text.substr(content, end - content) + (end < text.size() ? "\n" : "");
    at = end + 1;
  }
  return out;
}

struct Outcome {
  std::string refusal;
  trace::Trace trace;
};

Outcome read(const std::string& text) {
  std::istringstream in(text);
  try {
    return {"", trace::parse_rmm_csv(kName, in)};
  } catch (const Error& e) {
    return {e.what(), {}};
  }
}

void expect_same(const trace::Trace& a, const trace::Trace& b, const std::string& text) {
  ASSERT_EQ(a.events.size(), b.events.size()) << text;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const trace::Event x = a.events[i];
    const trace::Event y = b.events[i];
    ASSERT_EQ(std::tie(x.bytes, x.t_ns, x.index, x.line, x.slot, x.stream, x.op),
              std::tie(y.bytes, y.t_ns, y.index, y.line, y.slot, y.stream, y.op))
        << "event " << i << " of\n"
        << text;
  }
  EXPECT_EQ(a.streams, b.streams) << text;
  EXPECT_EQ(a.threads, b.threads) << text;
  EXPECT_EQ(a.slots, b.slots) << text;
  EXPECT_EQ(a.unknown_frees, b.unknown_frees) << text;
  EXPECT_EQ(a.source_entries, b.source_entries) << text;
  EXPECT_EQ(a.demand.peak_live_bytes, b.demand.peak_live_bytes) << text;
  EXPECT_EQ(a.demand.peak_with_failed_bytes, b.demand.peak_with_failed_bytes) << text;
}

TEST(RmmCommonRows, ALogReadsTheSameWhicheverPathItsRowsTake) {
  Rng rng(26);
  int whole = 0;
  int refused = 0;
  for (int log = 0; log < 600; ++log) {
    const double odd = std::array{0.0, 0.005, 0.02, 0.1}[rng.uniform(0, 3)];
    std::string text = kHeader;
    std::uint64_t us = rng.uniform(0, 3'000'000'000);
    for (std::uint64_t row = rng.uniform(1, 40); row > 0; --row) {
      us += rng.uniform(0, 3);
      text += random_row(rng, odd, us);
    }
    if (rng.chance(0.2)) text.pop_back();  // the last line without its '\n'
    const Outcome common = read(text);
    const Outcome split = read(with_extra_column(text));
    ASSERT_EQ(common.refusal, split.refusal) << text;
    if (!common.refusal.empty()) {
      ++refused;
      continue;
    }
    ++whole;
    expect_same(common.trace, split.trace, text);
  }
  EXPECT_GT(whole, 100) << "logs read to their end";
  EXPECT_GT(refused, 100) << "logs refused";
}

}  // namespace
}  // namespace oomlab
