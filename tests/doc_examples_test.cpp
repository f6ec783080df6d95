// The examples in README.md and docs/*.md print what the binary prints today: each `$ oomlab ...`
// line in a fenced block is run (from a folder where tests/ and ci/ are the repository's) and the
// lines under it must appear in its output, in order. A line of "..." stands for any lines, a
// line ending in "..." for any end of that line. An example whose command line carries a comment
// ("# on an H100") shows a GPU's output and is not run here.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = fs::path(testing::test_data_dir()).parent_path().parent_path();

struct Example {
  std::string file;
  std::size_t line = 0;  // of the command, 1-based
  std::string command;   // after "$ oomlab "
  std::vector<std::string> expected;
};

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r'))
    s.pop_back();
  return s;
}

std::vector<Example> examples_in(const fs::path& path) {
  std::ifstream in(path);
  std::vector<Example> out;
  bool fenced = false;
  Example* current = nullptr;
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.starts_with("```")) {
      fenced = !fenced;
      current = nullptr;
      continue;
    }
    if (!fenced) continue;
    if (line.starts_with("$ ")) {
      current = nullptr;
      if (!line.starts_with("$ oomlab ") || line.find(" # ") != std::string::npos) continue;
      out.push_back({fs::relative(path, kRepo).string(), number, line.substr(9), {}});
      current = &out.back();
    } else if (current != nullptr) {
      current->expected.push_back(rstrip(line));
    }
  }
  return out;
}

std::vector<Example> all_examples() {
  std::vector<Example> out = examples_in(kRepo / "README.md");
  if (fs::is_directory(kRepo / "docs")) {
    std::vector<fs::path> pages;
    for (const auto& entry : fs::directory_iterator(kRepo / "docs")) {
      if (entry.path().extension() == ".md") pages.push_back(entry.path());
    }
    std::sort(pages.begin(), pages.end());
    for (const fs::path& page : pages) {
      std::vector<Example> more = examples_in(page);
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  return out;
}

// A folder where the examples' relative paths (tests/data/..., ci/...) are the repository's and
// what they write (runs/...) lands in a scratch place.
fs::path example_folder() {
  const fs::path dir = fs::temp_directory_path() / "oomlab_doc_examples";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"tests", "ci"})
    fs::create_directory_symlink(kRepo / name, dir / name);
  return dir;
}

// Its stderr lines, then its stdout lines: oomlab says its notes before its results.
std::vector<std::string> output_of(const std::string& command, const fs::path& folder) {
  const fs::path err = folder / "stderr.txt";
  const std::string line = "cd '" + folder.string() + "' && '" + testing::oomlab_binary() + "' " +
                           command + " 2>'" + err.string() + "'";
  std::vector<std::string> lines;
  std::ifstream err_in;
  std::string out;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return lines;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    out.append(buffer.data(), n);
  pclose(pipe);
  err_in.open(err);
  for (std::string l; std::getline(err_in, l);)
    lines.push_back(rstrip(l));
  std::istringstream out_in(out);
  for (std::string l; std::getline(out_in, l);)
    lines.push_back(rstrip(l));
  return lines;
}

bool line_matches(const std::string& expected, const std::string& actual) {
  if (expected.size() > 3 && expected.ends_with("...")) {
    return actual.starts_with(expected.substr(0, expected.size() - 3));
  }
  return expected == actual;
}

// The expected lines, in runs separated by "...", each run consecutive and in order. Returns the
// first expected line not found, or "" when all were.
std::string first_missing(const std::vector<std::string>& expected,
                          const std::vector<std::string>& actual) {
  std::size_t from = 0;
  std::size_t i = 0;
  while (i < expected.size()) {
    if (expected[i] == "..." || expected[i].empty()) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < expected.size() && expected[end] != "..." && !expected[end].empty())
      ++end;
    bool found = false;
    for (std::size_t start = from; start + (end - i) <= actual.size() && !found; ++start) {
      bool all = true;
      for (std::size_t k = 0; k < end - i && all; ++k)
        all = line_matches(expected[i + k], actual[start + k]);
      if (all) {
        found = true;
        from = start + (end - i);
      }
    }
    if (!found) return expected[i];
    i = end;
  }
  return {};
}

TEST(DocExamples, EveryExampleThatNeedsNoGpuPrintsWhatTheDocsShow) {
  const std::vector<Example> examples = all_examples();
  ASSERT_FALSE(examples.empty()) << "no `$ oomlab` examples found under " << kRepo;
  const fs::path folder = example_folder();
  for (const Example& e : examples) {
    const std::vector<std::string> actual = output_of(e.command, folder);
    std::string shown;
    for (const std::string& l : actual)
      shown += "  | " + l + "\n";
    EXPECT_EQ(first_missing(e.expected, actual), "")
        << e.file << ":" << e.line << ": $ oomlab " << e.command << "\nprinted:\n"
        << shown;
  }
  fs::remove_all(folder);
}

TEST(DocExamples, TheMatcherNeedsEachRunOfLinesInOrder) {
  const std::vector<std::string> actual = {"a", "b", "c long", "d"};
  EXPECT_EQ(first_missing({"a", "b"}, actual), "");
  EXPECT_EQ(first_missing({"a", "...", "d"}, actual), "");
  EXPECT_EQ(first_missing({"c ...", "d"}, actual), "");
  EXPECT_EQ(first_missing({"a", "c long"}, actual), "a") << "not consecutive";
  EXPECT_EQ(first_missing({"d", "...", "a"}, actual), "a") << "out of order";
}

}  // namespace
}  // namespace oomlab
