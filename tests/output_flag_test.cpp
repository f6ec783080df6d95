// The `--json FILE|-` convention every command shares (harness/cli/output_flag.hpp): "-" is
// stdout with the words on stderr, a path is a file, "" is nothing.
#include "cli/output_flag.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "oomlab/error.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;

TEST(OutputFlag, ADashIsStdoutAndSendsTheWordsToStderr) {
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_TRUE(to_stdout("-"));
  EXPECT_FALSE(to_file("-"));
  EXPECT_EQ(&words_stream("-", out, err), &err);
  emit_output("-", "{}\n", out);
  EXPECT_EQ(out.str(), "{}\n");
}

TEST(OutputFlag, APathIsAFileAndLeavesStdoutToTheWords) {
  const fs::path file = fs::temp_directory_path() / "oomlab_output_flag_test.json";
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_TRUE(to_file(file.string()));
  EXPECT_EQ(&words_stream(file.string(), out, err), &out);
  emit_output(file.string(), "{\"a\": 1}\n", out);
  EXPECT_EQ(out.str(), "");
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"a\": 1}\n");
  fs::remove(file);
}

TEST(OutputFlag, NothingGivenWritesNothing) {
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_FALSE(to_stdout("") || to_file(""));
  EXPECT_EQ(&words_stream("", out, err), &out);
  emit_output("", "{}\n", out);
  EXPECT_EQ(out.str(), "");
}

TEST(OutputFlag, AFileThatCannotBeWrittenIsAnIoError) {
  std::ostringstream out;
  try {
    emit_output(fs::temp_directory_path().string(), "{}\n", out);  // a folder
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
  }
}

}  // namespace
}  // namespace oomlab::cli
