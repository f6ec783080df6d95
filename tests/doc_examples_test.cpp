// The examples in README.md and docs/*.md print what the binary prints today: each `$ oomlab ...`
// line in a fenced block is run (from a folder where tests/ and ci/ are the repository's) and the
// lines under it must appear in its output, in order. A line of "..." stands for any lines, a
// line ending in "..." for any end of that line. An example whose command line carries a comment
// ("# on an H100") shows a GPU's output and is not run here. Every relative link of the pages
// (README.md, ARCHITECTURE.md, docs/*.md) leads to a file of the repository, and its #anchor to a
// heading there.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
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

std::vector<fs::path> docs_pages() {
  std::vector<fs::path> pages;
  if (fs::is_directory(kRepo / "docs")) {
    for (const auto& entry : fs::directory_iterator(kRepo / "docs")) {
      if (entry.path().extension() == ".md") pages.push_back(entry.path());
    }
  }
  std::sort(pages.begin(), pages.end());
  return pages;
}

std::vector<Example> all_examples() {
  std::vector<Example> out = examples_in(kRepo / "README.md");
  for (const fs::path& page : docs_pages()) {
    std::vector<Example> more = examples_in(page);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

// A heading's anchor as GitHub makes it: lower case, spaces to dashes, punctuation dropped
// (letters beyond ASCII kept).
std::string anchor_of(const std::string& heading) {
  std::string out;
  for (const char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      out += static_cast<char>(std::tolower(u));
    } else if (c == ' ' || c == '-') {
      out += '-';
    } else if (c == '_' || u >= 0x80) {
      out += c;
    }
  }
  return out;
}

std::set<std::string> anchors_in(const fs::path& page) {
  std::ifstream in(page);
  std::set<std::string> out;
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced || !line.starts_with("#")) continue;
    const std::size_t text = line.find_first_not_of('#');
    if (text != std::string::npos) out.insert(anchor_of(rstrip(line.substr(text + 1))));
  }
  return out;
}

// Each "](target)" outside code blocks that is not a web address: what it names that is missing.
std::vector<std::string> broken_links_in(const fs::path& page) {
  std::ifstream in(page);
  std::vector<std::string> broken;
  bool fenced = false;
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.starts_with("```")) fenced = !fenced;
    if (fenced) continue;
    for (std::size_t at = line.find("]("); at != std::string::npos; at = line.find("](", at + 2)) {
      const std::size_t end = line.find(')', at + 2);
      if (end == std::string::npos) break;
      const std::string target = line.substr(at + 2, end - at - 2);
      if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
      const std::size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const fs::path named = file.empty() ? page : page.parent_path() / file;
      const std::string where = fs::relative(page, kRepo).string() + ":" + std::to_string(number);
      if (!fs::exists(named)) {
        broken.push_back(where + ": " + target + " (no such file)");
      } else if (hash != std::string::npos && named.extension() == ".md" &&
                 !anchors_in(named).contains(target.substr(hash + 1))) {
        broken.push_back(where + ": " + target + " (no such heading)");
      }
    }
  }
  return broken;
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

TEST(DocExamples, EveryRelativeLinkLeadsToAFileAndHeadingOfTheRepository) {
  std::vector<fs::path> pages = {kRepo / "README.md", kRepo / "ARCHITECTURE.md"};
  for (const fs::path& page : docs_pages())
    pages.push_back(page);
  std::size_t links = 0;
  for (const fs::path& page : pages) {
    ASSERT_TRUE(fs::is_regular_file(page)) << page;
    for (const std::string& broken : broken_links_in(page))
      ADD_FAILURE() << broken;
    std::ifstream in(page);
    for (std::string line; std::getline(in, line);)
      links += line.find("](") != std::string::npos ? 1 : 0;
  }
  EXPECT_GT(links, 0U) << "the README links to its reference pages";
}

TEST(DocExamples, AnchorsAreMadeAsGitHubMakesThem) {
  EXPECT_EQ(anchor_of("Exit codes"), "exit-codes");
  EXPECT_EQ(anchor_of("PyTorch's allocator: `torch`"), "pytorchs-allocator-torch");
  EXPECT_EQ(anchor_of("The largest setting that fits: `fit` and `fit exec`"),
            "the-largest-setting-that-fits-fit-and-fit-exec");
  EXPECT_EQ(anchor_of("Data integrity (`--verify=all|sample|off`)"),
            "data-integrity---verifyallsampleoff");
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
