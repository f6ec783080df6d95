// io/output_file.hpp, the one way oomlab writes a file, and what rests on it: a full filesystem
// (a 64 KiB tmpfs) loses no printed result and leaves no 0-byte or truncated file; the content
// hash of a file a parameter names (io/file_digest.hpp).
#include "io/output_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/child_process.hpp"
#include "io/file_digest.hpp"
#include "oomlab/error.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ::oomlab::testing::read_text;

fs::path fresh_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_output_file_test_" + name);
}

// The names in a folder, sorted (temporaries included: they start with a dot).
std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    names.push_back(fs::relative(entry.path(), folder).string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, MakesTheFoldersAndLeavesOnlyTheFile) {
  const fs::path root = fresh_folder("folders");
  write_output_file(root / "a" / "b" / "summary.json", "{}\n");
  EXPECT_EQ(read_text(root / "a" / "b" / "summary.json"), "{}\n");
  EXPECT_EQ(names_in(root), (std::vector<std::string>{"a", "a/b", "a/b/summary.json"}));
}

TEST(OutputFile, AStreamedFileAppearsOnlyWhenCommitted) {
  const fs::path root = fresh_folder("streamed");
  {
    OutputFile file(root / "events.csv");
    file.write("seq,t_ns\n");
    EXPECT_FALSE(fs::exists(root / "events.csv")) << "not before the commit";
    ASSERT_EQ(names_in(root).size(), 1U);
    EXPECT_EQ(names_in(root).front().rfind(".events.csv.", 0), 0U) << "a hidden temporary";
  }
  EXPECT_TRUE(names_in(root).empty()) << "dropped uncommitted: nothing left";
  OutputFile file(root / "events.csv");
  file.write("seq,t_ns\n");
  file.write("0,1\n");
  file.commit();
  EXPECT_EQ(read_text(root / "events.csv"), "seq,t_ns\n0,1\n");
  EXPECT_EQ(names_in(root), std::vector<std::string>{"events.csv"});
}

TEST(OutputFile, DevicesAreWrittenInPlaceAndLinksKept) {
  write_output_file("/dev/null", "nothing");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is still the device";

  const fs::path root = fresh_folder("link");
  write_output_file(root / "real.json", "old");
  fs::create_symlink(root / "real.json", root / "link.json");
  write_output_file(root / "link.json", "new");
  EXPECT_TRUE(fs::is_symlink(root / "link.json"));
  EXPECT_EQ(read_text(root / "real.json"), "new");
}

TEST(OutputFile, AFolderInTheWayIsAnIoErrorNamingThePath) {
  const fs::path root = fresh_folder("folder_in_the_way");
  fs::create_directories(root / "summary.json");
  try {
    write_output_file(root / "summary.json", "{}");
    FAIL() << "a folder cannot be written over";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(std::string(e.what()),
              "cannot write " + (root / "summary.json").string() + ": Is a directory");
  }
}

// FIPS 180-2's own examples: one block, none, and two blocks.
TEST(FileDigest, Sha256OfTheStandardsExamples) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const fs::path root = fresh_folder("digest");
  write_output_file(root / "trace.csv", "abc");
  EXPECT_EQ(file_digest(root / "trace.csv"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The CPU's SHA instructions (where it has them) and the portable code agree, on a million
// 'a's (the standard's third example) and on every length around the block's edges.
TEST(FileDigest, Sha256WithAndWithoutTheCpusInstructionsAgree) {
  const std::string million(1'000'000, 'a');
  EXPECT_EQ(sha256_hex(million),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex_portable(million),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::string bytes;
  for (std::size_t n = 0; n < 300; ++n) {
    ASSERT_EQ(sha256_hex(bytes), sha256_hex_portable(bytes)) << n << " bytes";
    bytes.push_back(static_cast<char>((n * 131 + 7) & 0xFF));
  }
  // A file read in pieces of 1 MiB, one of them not a whole number of blocks.
  const fs::path root = fresh_folder("digest_large");
  const std::string large(3 * (1U << 20U) + 77, 'x');
  write_output_file(root / "large.bin", large);
  EXPECT_EQ(file_digest(root / "large.bin"), "sha256:" + sha256_hex_portable(large));
}

// The digests a run records are worked out beside it: the same as file_digests() gives, for the
// text parameters that name regular files only; asked twice, the same again.
TEST(FileDigest, WorkedOutBesideTheRunTheyAreTheSame) {
  const fs::path root = fresh_folder("digest_beside");
  const std::string large(5 * (1U << 20U) + 3, 'y');
  write_output_file(root / "trace.csv", large);
  const ParamSpec spec{{.name = "trace", .type = ParamType::text, .default_value = std::string()},
                       {.name = "folder", .type = ParamType::text, .default_value = std::string()},
                       {.name = "label", .type = ParamType::text, .default_value = std::string()}};
  Params params(spec);
  params.set("trace", (root / "trace.csv").string());
  params.set("folder", root.string());
  params.set("label", "not a file");
  FileDigests beside(spec, params);
  const std::map<std::string, std::string> expected{
      {"trace", "sha256:" + sha256_hex_portable(large)}};
  EXPECT_EQ(beside.get(), expected);
  EXPECT_EQ(beside.get(), expected);
  EXPECT_EQ(file_digests(spec, params), expected);
  { FileDigests abandoned(spec, params); }  // stops its hashing, never asked
}

// A 64 KiB tmpfs: small enough to fill.
class FullFilesystem : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = fresh_folder("tmpfs");
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=64k") != 0) {
      GTEST_SKIP() << "cannot mount a 64 KiB tmpfs on " << mount_ << ": " << std::strerror(errno)
                   << " (needs root, as CI has)";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(mount_.c_str(), MNT_DETACH);
    fs::remove_all(mount_);
  }
  // Takes every byte left, so that the next write fails.
  void fill() {
    const int fd = ::open((mount_ / "filler").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    const std::string block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
  }
  // Every file there other than the filler: none empty, none a temporary.
  void expect_no_debris(const fs::path& folder) const {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (!entry.is_regular_file() || entry.path().filename() == "filler") continue;
      EXPECT_NE(entry.path().filename().string().front(), '.') << "temporary: " << entry.path();
      EXPECT_GT(entry.file_size(), 0U) << "0-byte: " << entry.path();
    }
  }

  fs::path mount_;
  bool mounted_ = false;
};

TEST_F(FullFilesystem, AFailedWriteNamesTheReasonAndKeepsTheOldFile) {
  write_output_file(mount_ / "summary.json", "old");
  fill();
  try {
    write_output_file(mount_ / "summary.json", std::string(100'000, 'n'));
    FAIL() << "the disk is full";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(std::string(e.what()),
              "cannot write " + (mount_ / "summary.json").string() + ": No space left on device");
  }
  EXPECT_EQ(read_text(mount_ / "summary.json"), "old");
  EXPECT_THROW(write_output_file(mount_ / "new.json", std::string(100'000, 'n')), Error);
  EXPECT_FALSE(fs::exists(mount_ / "new.json"));
  expect_no_debris(mount_);
}

struct Ran {
  cli::ChildResult child;
  fs::path folder;
};

Ran run_into(const fs::path& folder, std::vector<std::string> extra) {
  std::vector<std::string> argv = {
      testing::oomlab_binary(), "run", "fragmentation", "-a", "sim", "--budget", "256MiB", "--out",
      folder.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return {cli::run_child(argv, {.timeout = std::chrono::seconds(60)}), folder};
}

// events.csv (hundreds of KiB) cannot fit: the run's JSON still comes out whole on stdout, the
// failure is named, exit 5, and the folder holds no half file.
TEST_F(FullFilesystem, RunWithJsonToStdoutPrintsItsResultAndExitsFive) {
  const Ran r = run_into(mount_ / "run", {"--json", "-"});
  EXPECT_EQ(r.child.exit_code, 5) << r.child.err_tail;
  const json summary = json::parse(r.child.out);  // throws when not the whole document
  EXPECT_EQ(summary.at("outcome"), "oom");
  EXPECT_NE(r.child.err_tail.find("oomlab: error: cannot write " +
                                  (r.folder / "events.csv").string() + ": No space left on device"),
            std::string::npos)
      << r.child.err_tail;
  EXPECT_FALSE(fs::exists(r.folder / "events.csv"));
  expect_no_debris(mount_);
}

TEST_F(FullFilesystem, RunOnAFullDiskStillPrintsItsSummary) {
  fill();
  const Ran r = run_into(mount_ / "run", {});
  EXPECT_EQ(r.child.exit_code, 5) << r.child.err_tail;
  EXPECT_NE(r.child.out.find("fragmentation"), std::string::npos) << r.child.out;
  EXPECT_EQ(r.child.out.find("wrote"), std::string::npos) << "nothing was written: " << r.child.out;
  for (const char* file : {"events.csv", "summary.json"}) {
    EXPECT_NE(r.child.err_tail.find("cannot write " + (r.folder / file).string() +
                                    ": No space left on device"),
              std::string::npos)
        << file << ": " << r.child.err_tail;
  }
  expect_no_debris(mount_);
}

}  // namespace
}  // namespace oomlab
