// RMM logs read by oomlab's own row reader (blocks, memchr, in-place split): the same rows, line
// numbers and refusals as the CSV reader it replaced.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "oomlab/error.hpp"
#include "trace/importers.hpp"

namespace oomlab {
namespace {

const std::filesystem::path kName = "rmm.csv";

trace::Trace parse(const std::string& text) {
  std::istringstream in(text);
  return trace::parse_rmm_csv(kName, in);
}

std::string refusal(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RmmRows, ByteOrderMarkCrLfBlankLinesAndNoFinalNewline) {
  const trace::Trace t = parse(
      "\xEF\xBB\xBF\r\nThread,Time,Action,Pointer,Size,Stream\r\n"
      "1,10:00:00.000001,allocate,0x10,64,0x0\r\n"
      "\r\n  \t\n"
      "1,10:00:00.000002,free,0x10,64,0x0");
  ASSERT_EQ(t.events.size(), 2U);
  EXPECT_EQ(t.events[0].line, 3U);
  EXPECT_EQ(t.events[1].line, 6U) << "blank lines keep their numbers";
  EXPECT_EQ(t.events[1].op, trace::Op::free);
  EXPECT_EQ(t.events[0].slot, 0U);
  EXPECT_EQ(t.events[1].slot, 0U) << "the free found its allocation";
  EXPECT_EQ(t.events[1].t_ns, 1000U);
}

TEST(RmmRows, ColumnsInTheHeadersOrderTrimmedAndExtraOnesIgnored) {
  const trace::Trace t = parse(
      "Size, Extra ,Pointer,Stream,Action,Time,Thread\n"
      " 4096 ,x, 0x7f00 ,0x5, allocate\t,00:00:01.5,42\n"
      " 4096 ,x, 0x7f00 ,0x5, free,00:00:01.6,42\n");
  ASSERT_EQ(t.events.size(), 2U);
  EXPECT_EQ(t.events[0].bytes, 4096U);
  EXPECT_EQ(t.events[1].slot, t.events[0].slot) << "the free found its allocation by 0x7f00";
  EXPECT_EQ(t.unknown_frees, 0U);
  EXPECT_EQ(t.streams, (std::vector<std::uint64_t>{5}));
}

TEST(RmmRows, RefusalsNameTheirLine) {
  const std::string header = "Thread,Time,Action,Pointer,Size,Stream\n";
  EXPECT_EQ(refusal(header + "\n1,10:00:00.0,allocate,0x10\n"), "rmm.csv:3: too few columns");
  EXPECT_EQ(refusal(header + "1,10:00:00.0,allocate,0x10,64,0,9\n"), "rmm.csv:2: too many columns");
  EXPECT_EQ(refusal("Thread,Time,Action,Pointer,Size\n1,2,3,4,5\n"),
            "rmm.csv:1: the header lacks the column 'Stream'");
  EXPECT_EQ(refusal("\n\n"), "rmm.csv:1: the file is empty: no header");
  EXPECT_EQ(refusal(header + "1,10:00:00.0,allocate,0x10,64,0\n1,10:00:00.0,alloc,0x20,64,0\n"),
            "rmm.csv:3: Action: 'alloc' is not an RMM action (allocate, free, allocate failure)");
}

// Over 32 MiB (the reader's buffer): rows cross its refills and none is lost or cut.
TEST(RmmRows, ALogLargerThanTheBufferKeepsEveryRow) {
  std::string text = "Thread,Time,Action,Pointer,Size,Stream\n";
  constexpr std::uint64_t kRows = 700'000;
  for (std::uint64_t i = 0; i < kRows; ++i) {
    text += "140201349764864,10:00:00.000000,allocate,0x" + std::to_string(0x7f0000000000 + i) +
            "," + std::to_string(256 + i) + ",0x0\n";
  }
  ASSERT_GT(text.size(), std::size_t{32} << 20U);
  const trace::Trace t = parse(text);
  ASSERT_EQ(t.events.size(), kRows);
  for (std::uint64_t i = 0; i < kRows; ++i) {
    ASSERT_EQ(t.events[i].bytes, 256 + i) << "row " << i;
    ASSERT_EQ(t.events[i].line, i + 2) << "row " << i;
  }
}

}  // namespace
}  // namespace oomlab
