// A report in a real browser: headless Chromium renders a run report; its DOM holds the OOM
// marker and its screenshot is not blank and shows the marker's colour. Skips, saying why,
// without chromium or python3 (which decodes the PNG), unless OOMLAB_REQUIRE_BROWSER=1.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/report_writer.hpp"
#include "reports/writers/svg_chart.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

fs::path report_data() {
  return fs::path(testing::test_data_dir()) / "report";
}

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_report_browser_test_" + name);
}

using ::oomlab::testing::read_text;

// The first of `names` found on PATH, or "".
std::string find_program(std::initializer_list<const char*> names) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "/usr/bin:/bin" : path);
  std::vector<std::string> folders;
  for (std::string d; std::getline(dirs, d, ':');)
    folders.push_back(d);
  for (const char* name : names) {
    for (const std::string& folder : folders) {
      const fs::path candidate = fs::path(folder) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return {};
}

// Runs argv with stdout to `stdout_file`, in a process group of its own, killed whole when it
// outlives `seconds` (a hung browser must not hang the suite). Returns the exit code, -1 on
// timeout.
int run_with_timeout(const std::vector<std::string>& argv, const fs::path& stdout_file,
                     int seconds) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(fd, 1);
    ::dup2(null, 2);
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);  // helpers the browser left behind
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Decodes an 8-bit RGB(A) PNG with Python's zlib and prints: width height non-white matching.
constexpr const char* kPngCounter = R"PY(
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, head = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR": head = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT": idat += body
    pos += 12 + length
width, height, depth, colour, _, _, interlace = head
assert depth == 8 and colour in (2, 6) and not interlace, "unsupported PNG %r" % (head,)
bpp = 3 if colour == 2 else 4
raw, stride, prev, i = zlib.decompress(idat), width * bpp, bytearray(width * bpp), 0
want = bytes.fromhex(sys.argv[2].lstrip("#"))
nonwhite = matching = 0
for _ in range(height):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        if r < 245 or g < 245 or b < 245: nonwhite += 1
        if abs(r - want[0]) <= 3 and abs(g - want[1]) <= 3 and abs(b - want[2]) <= 3: matching += 1
    prev = line
print(width, height, nonwhite, matching)
)PY";

struct PngCount {
  long width = 0;
  long height = 0;
  long nonwhite = 0;
  long matching = 0;
};

// Skips (or fails, where OOMLAB_REQUIRE_BROWSER=1) when `program` is empty.
#define OOMLAB_REQUIRE_PROGRAM(program, what)                                              \
  do {                                                                                     \
    if ((program).empty()) {                                                               \
      const char* require = std::getenv("OOMLAB_REQUIRE_BROWSER");                         \
      if (require != nullptr && std::string(require) == "1") {                             \
        FAIL() << what << " not found on PATH, and OOMLAB_REQUIRE_BROWSER=1";              \
      }                                                                                    \
      GTEST_SKIP() << what << " not found on PATH (set OOMLAB_REQUIRE_BROWSER=1 to fail)"; \
    }                                                                                      \
  } while (0)

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_program({"chromium", "chromium-browser", "google-chrome"});
    python_ = find_program({"python3"});
    OOMLAB_REQUIRE_PROGRAM(chromium_, "chromium (Debian package 'chromium')");
    OOMLAB_REQUIRE_PROGRAM(python_, "python3 (to decode the screenshot)");
    // One folder per test: ctest may run the two at once.
    folder_ = temp_folder(std::string("browser_") +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  // Chromium, headless, with a profile of its own; its stdout lands in `stdout_file`.
  void chromium(const fs::path& page, const std::string& action, const fs::path& stdout_file) {
    const fs::path profile = folder_ / ("profile-" + stdout_file.stem().string());
    fs::remove_all(profile);
    const int code = run_with_timeout(
        {chromium_, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--user-data-dir=" + profile.string(), "--window-size=1280,1000", action,
         "file://" + fs::absolute(page).string()},
        stdout_file, 60);
    ASSERT_NE(code, -1) << "chromium hung for 60 s and was killed";
    ASSERT_EQ(code, 0) << "chromium failed on " << page;
  }

  PngCount count_pixels(const fs::path& png) {
    std::ofstream(folder_ / "png_count.py") << kPngCounter;
    const fs::path result = folder_ / "png_count.txt";
    EXPECT_EQ(
        run_with_timeout({python_, (folder_ / "png_count.py").string(), png.string(), kOomColour},
                         result, 60),
        0);
    PngCount count;
    std::istringstream(read_text(result)) >> count.width >> count.height >> count.nonwhite >>
        count.matching;
    return count;
  }

  std::string chromium_;
  std::string python_;
  fs::path folder_;
};

TEST_F(ReportBrowser, RendersTheRunReportWithItsOomMarker) {
  (void)write_reports(report_data() / "run_sim", folder_ / "run");
  const fs::path page = folder_ / "run" / "report.html";

  ASSERT_NO_FATAL_FAILURE(chromium(page, "--dump-dom", folder_ / "dom.html"));
  const std::string dom = read_text(folder_ / "dom.html");
  EXPECT_NE(dom.find("id=\"oom-marker\""), std::string::npos) << dom.substr(0, 400);
  EXPECT_NE(dom.find("id=\"budget-line\""), std::string::npos);

  const fs::path png = folder_ / "run.png";
  ASSERT_NO_FATAL_FAILURE(chromium(page, "--screenshot=" + png.string(), folder_ / "shot.txt"));
  const PngCount count = count_pixels(png);
  EXPECT_EQ(count.width, 1280);
  EXPECT_EQ(count.height, 1000);
  EXPECT_GT(count.nonwhite, count.width * count.height / 20) << "the page is (nearly) blank";
  EXPECT_GT(count.matching, 100) << "no pixels of the OOM marker's colour " << kOomColour;
}

TEST_F(ReportBrowser, ACompletedRunShowsNoOomColour) {
  (void)write_reports(report_data() / "matrix" / "leak-sim", folder_ / "completed");
  const fs::path png = folder_ / "completed.png";
  ASSERT_NO_FATAL_FAILURE(chromium(folder_ / "completed" / "report.html",
                                   "--screenshot=" + png.string(), folder_ / "shot2.txt"));
  const PngCount count = count_pixels(png);
  EXPECT_GT(count.nonwhite, count.width * count.height / 20) << "the page is (nearly) blank";
  EXPECT_EQ(count.matching, 0) << "the OOM colour belongs to the OOM marker alone";
}

}  // namespace
}  // namespace oomlab
