// The catalogue of bad invocations: each runs the real binary and must end with its exit code and
// a one-line message naming the problem — never a crash, never a hang (every child has a deadline).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;

// Bad files, made once: an empty one, text that is no trace, JSON that is no summary, a folder,
// a FIFO (reading it would block forever), a "library" that is text.
const fs::path& files() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / "oomlab_cli_errors";
    fs::remove_all(d);
    fs::create_directories(d / "folder");
    std::ofstream(d / "empty.csv").close();
    std::ofstream(d / "garbage.csv") << "a,b,c\n1,2,3\n";
    std::ofstream(d / "not_json.json") << "{\"schema\": \"oomlab.run.v1\", \"cells\": [1,\n";
    std::ofstream(d / "other_schema.json") << "{\"schema\": \"something.else\"}\n";
    std::ofstream(d / "text.so") << "not a shared library\n";
    std::ofstream(d / "rmm_bad_row.csv")
        << "Thread,Time,Action,Pointer,Size,Stream\n1,0.5,allocate,0x10,-7,0x0\n";
    ::mkfifo((d / "fifo").c_str(), 0600);
    return d;
  }();
  return dir;
}

struct BadInvocation {
  std::vector<std::string> args;  // after the program name; "@" stands for the files' folder
  int exit_code;
  std::string fragment;  // in the last line of stderr
};

std::vector<std::string> expand(const std::vector<std::string>& args) {
  std::vector<std::string> out = {oomlab_binary()};
  for (const std::string& a : args) {
    std::string s = a;
    if (const auto at = s.find('@'); at != std::string::npos) s.replace(at, 1, files().string());
    out.push_back(s);
  }
  return out;
}

// Sizes and budgets.
std::vector<BadInvocation> size_cases() {
  return {
      // Sizes
      {{"run", "fragmentation", "-a", "sim", "--budget=-1"}, 2, "--budget: '-1' is not a size"},
      {{"run", "fragmentation", "-a", "sim", "--budget=1e400"},
       2,
       "--budget: '1e400' is not a size"},
      {{"run", "fragmentation", "-a", "sim", "--budget=8XB"}, 2, "unknown unit 'XB'"},
      {{"run", "fragmentation", "-a", "sim", "--budget=0"}, 2, "a budget of 0 bytes"},
      {{"run", "fragmentation", "-a", "sim", "--no-out", "--csv", "-"},
       2,
       "--csv: '-' is not taken"},
      {{"run", "fragmentation", "-a", "sim", "--budget=101%"}, 2, "'101%' is out of range"},
      {{"run", "fragmentation", "-a", "sim", "--budget=0%"}, 2, "'0%' is out of range"},
      {{"run", "fragmentation", "-a", "sim", "--budget=99999999TiB"}, 2, "too large a size"},
      {{"run", "fragmentation", "-a", "sim", "--budget=18446744073709551616"}, 2, "too large"},
      {{"run", "fragmentation", "-a", "sim", "--budget="}, 2, "--budget"},
      {{"run", "fragmentation", "-a", "sim", "-p", "block=-5"}, 2, "--param block: '-5'"},
      {{"run", "fragmentation", "-a", "sim", "-p", "block=0"}, 2, "block must be > 0"},
      {{"run", "fragmentation", "-a", "sim:total=0"}, 2, "less than one 2.00 MiB page"},
      {{"run", "growing-batch", "-a", "sim", "--budget=1MiB"}, 2, "less than one 2.00 MiB page"},
      {{"run", "growing-batch", "-a", "sim", "-p", "start=2000000"},
       2,
       "start = 2000000 is above the search's limit"},
      {{"run", "mixed-precision", "-a", "sim", "-p", "start=1048577"},
       2,
       "start = 1048577 is above the search's limit"},
      {{"run", "fragmentation", "-a", "sim:page=3"}, 2, "page must be a multiple of 256 B"},
      {{"run", "fragmentation", "-a", "async:release_threshold=abc"}, 2, "'abc' is not a size"},
  };
}

// Unknown names, missing and conflicting arguments.
std::vector<BadInvocation> name_cases() {
  return {
      // Unknown names
      {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {{"run", "nosuch", "-a", "sim"}, 2, "unknown scenario 'nosuch'"},
      {{"run", "fragmentation", "-a", "nosuch"}, 2, "unknown allocator 'nosuch'"},
      {{"run", "fragmentation", "-a", "sim:nosuch=1"}, 2, "unknown parameter 'nosuch'"},
      {{"run", "fragmentation", "-a", "sim", "-p", "nosuch=1"}, 2, "unknown parameter 'nosuch'"},
      {{"run", "fragmentation", "-a", "sim", "-p", "pattern=zigzag"}, 2, "'zigzag' is not one of"},
      {{"run", "fragmentation", "-a", "sim", "--verify=maybe"}, 2, "'maybe' is not all, sample"},
      {{"run", "fragmentation", "-a", "sim", "-p", "touch=maybe"}, 2, "'maybe' is not on or off"},
      {{"matrix", "--scenarios=nosuch", "-a", "sim"}, 2, "unknown scenario 'nosuch'"},
      {{"run", "replay", "-a", "sim", "--trace", "@/garbage.csv", "--format", "nosuch"},
       2,
       "'nosuch' is not one of"},
      {{"list", "--bogus"}, 2, "list: unknown option '--bogus'"},
      {{"run", "fragmentation", "-a", "sim", "--budgt=1GiB"}, 2, "did you mean '--budget'?"},
      {{"compare", "@/garbage.csv", "@/garbage.csv", "--force"},
       2,
       "compare: unknown option '--force'"},
      {{"frontier", "leak", "-a", "sim", "--timeout"}, 2, "frontier: --timeout needs a value"},
      {{"frontier", "leak", "-a", "sim", "--timeout=0"}, 2, "--timeout: '0'"},
      {{"frontier", "leak", "-a", "sim", "--out", "/proc/oomlab-nope"}, 5, "--out: cannot create"},
      // Missing and conflicting arguments
      {{"run"}, 2, "scenario is required"},
      {{"compare"}, 2, "baseline is required"},
      {{"run", "fragmentation", "-a", "sim", "--expect-oom", "--expect-no-oom"},
       2,
       "--expect-oom and --expect-no-oom cannot be given together"},
      {{"run", "fragmentation", "-a", "sim", "--budget=all", "--budget=1GiB"},
       2,
       "--budget is given 2 times; give it once"},
      {{"run", "fragmentation", "-a", "sim", "-p", "block"}, 2, "expected key=value"},
      {{"run", "replay", "-a", "sim"}, 2, "replay needs a trace"},
      {{"run", "fragmentation", "-a", "sim", "--trace", "x.csv"}, 2, "takes no trace"},
  };
}

// Files read and written, and plugins.
std::vector<BadInvocation> file_cases() {
  return {
      // Files: missing, empty, unreadable kinds, wrong contents
      {{"run", "replay", "-a", "sim", "--trace", "@/nonexistent.csv"}, 2, "cannot open the trace"},
      {{"run", "replay", "-a", "sim", "--trace", "@/empty.csv"}, 2, "the trace is empty"},
      {{"run", "replay", "-a", "sim", "--trace", "@/folder"}, 2, "is a folder, not a trace file"},
      {{"run", "replay", "-a", "sim", "--trace", "@/fifo"}, 2, "not a regular file"},
      {{"run", "replay", "-a", "sim", "--trace", "@/garbage.csv"}, 2, "not a trace oomlab knows"},
      {{"run", "replay", "-a", "sim", "--trace", "@/garbage.csv", "--format", "rmm"},
       2,
       "garbage.csv:1: the header lacks the column"},
      {{"run", "replay", "-a", "sim", "--trace", "@/rmm_bad_row.csv"}, 2, "rmm_bad_row.csv:2:"},
      {{"compare", "@/nonexistent.json", "@/nonexistent.json"}, 2, "cannot read"},
      {{"compare", "@/not_json.json", "@/not_json.json"}, 2, "not_json.json:2:"},
      {{"compare", "@/other_schema.json", "@/other_schema.json"}, 2, "schema 'something.else'"},
      {{"compare", "@/empty.csv", "@/empty.csv"}, 2, "empty.csv:1:1: not valid JSON"},
      {{"compare", "@/fifo", "@/fifo"}, 2, "not a regular file"},
      {{"compare", "@/folder", "@/folder"}, 2, "neither matrix.json nor summary.json"},
      {{"report", "@/nonexistent"}, 2, "no such file or folder"},
      {{"report", "@/empty.csv"}, 2, "not valid JSON"},
      {{"report", "@/fifo"}, 2, "not a regular file"},
      // Outputs that cannot be written: refused before the run, with exit 5 as after it
      {{"run", "fragmentation", "-a", "sim", "--out", "/proc/oomlab-nope"},
       5,
       "--out: cannot create"},
      {{"run", "fragmentation", "-a", "sim", "--json", "@/nope/x.json"}, 5, "--json: cannot write"},
      {{"run", "fragmentation", "-a", "sim", "--csv", "@/folder"}, 5, "is a folder, not a file"},
      {{"run", "fragmentation", "-a", "sim", "--junit", "@/nope/x.xml"},
       5,
       "--junit: cannot write"},
      // Plugins
      {{"list", "--plugin", "@/nonexistent.so"}, 2, "no such file"},
      {{"list", "--plugin", "@/text.so"}, 2, "cannot be loaded"},
      {{"list", "--plugin", "@/folder"}, 2, "is a folder, not a shared library"},
      {{"list", "--plugin", "@/fifo"}, 2, "not a regular file"},
      {{"list", "--plugin"}, 2, "--plugin: needs the path"},
      {{"list", "--plugin", oomlab::testing::test_plugin("no_entry")},
       2,
       "exports no extern \"C\" oomlab_register"},
      {{"list", "--plugin", oomlab::testing::test_plugin("empty")},
       2,
       "registered no scenario (nor a backend, a trace format or an OOM dialect)"},
      {{"list", "--plugin", oomlab::testing::test_plugin("duplicate")},
       2,
       "registers scenario 'fragmentation', a name "
       "already taken"},
      {{"list", "--plugin", oomlab::testing::test_plugin("throwing")},
       2,
       "oomlab_register threw: this plugin refuses"},
      {{"list", "--plugin", oomlab::testing::test_plugin("unresolved")}, 2, "undefined symbol"},
  };
}

const std::vector<BadInvocation>& catalogue() {
  static const std::vector<BadInvocation> cases = [] {
    std::vector<BadInvocation> all = size_cases();
    const std::vector<BadInvocation> rest = {
        // Numbers
        {{"run", "fragmentation", "-a", "sim", "--seed=-3"},
         2,
         "--seed: '-3' must not be negative"},
        {{"run", "fragmentation", "-a", "sim", "--seed=abc"}, 2, "'abc' is not a whole number"},
        {{"run", "fragmentation", "-a", "sim", "--seed=99999999999999999999999"},
         2,
         "out of range"},
        {{"run", "fragmentation", "-a", "sim", "--device=x"}, 2, "--device: 'x'"},
        {{"run", "fragmentation", "-a", "sim", "--timeout=abc"}, 2, "--timeout: 'abc'"},
        {{"run", "fragmentation", "-a", "sim", "--timeout=0"}, 2, "--timeout: '0'"},
        {{"run", "fragmentation", "-a", "sim", "--repeat=0"}, 2, "--repeat: '0'"},
        {{"run", "growing-batch", "-a", "sim", "-p", "layers=0"}, 2, "below the least allowed"},
        {{"matrix", "-a", "sim", "--repeat=0"}, 2, "--repeat: '0'"},
        {{"matrix", "-a", "sim", "--timeout=-1"}, 2, "--timeout: '-1'"},
        {{"matrix", "-a", "sim", "--devices=abc"}, 2, "--devices: 'abc'"},
        {{"compare", "@/garbage.csv", "@/garbage.csv", "--tolerance=abc"}, 2, "--tolerance: 'abc'"},
        // exec and frontier exec: refused before any device is touched
        {{"exec"}, 2, "exec: no program to run: put it after '--'"},
        {{"exec", "python", "train.py"}, 2, "put the program after '--'"},
        {{"exec", "--", "no-such-program-oomlab"}, 2, "cannot run 'no-such-program-oomlab'"},
        {{"exec", "--", "@/garbage.csv"}, 2, "no such executable file"},
        {{"exec", "--budget=abc", "--", "true"}, 2, "--budget: 'abc' is not a size"},
        {{"exec", "--timeout=0", "--", "true"}, 2, "--timeout: '0'"},
        {{"exec", "--grace=-1", "--", "true"}, 2, "--grace: '-1'"},
        {{"exec", "--interval=0", "--", "true"}, 2, "--interval: '0'"},
        {{"exec", "--devices=abc", "--", "true"}, 2, "--devices: 'abc'"},
        {{"exec", "--budget=4GiB", "--budgets=0=2GiB", "--", "true"},
         2,
         "--budget and --budgets: give one"},
        {{"exec", "--budgets=0:2GiB", "--", "true"}, 2, "--budgets: '0:2GiB' is not DEVICE=BUDGET"},
        {{"exec", "--budgets=0=abc", "--", "true"}, 2, "--budgets: '0=abc': 'abc' is not a size"},
        {{"exec", "--budgets=x=2GiB", "--", "true"}, 2, "--budgets: 'x=2GiB'"},
        {{"exec", "--budgets=0=2GiB,0=3GiB", "--", "true"},
         2,
         "--budgets: device 0 is given twice"},
        {{"exec", "--devices=0,1", "--budgets=0=2GiB,2=3GiB", "--", "true"},
         2,
         "--budgets: device 2 is not in --devices 0,1"},
        {{"exec", "--devices=0,1", "--budgets=0=2GiB", "--", "true"},
         2,
         "--budgets: device 1 of --devices has no budget"},
        {{"exec", "--json", "@/nosuch/x.json", "--", "true"}, 5, "--json: cannot write"},
        {{"exec", "--expect-oom", "--expect-no-oom", "--", "true"}, 2, "cannot be given together"},
        {{"exec", "--snapshot-stacks=all", "--", "true"}, 2, "--snapshot-stacks: 'all' is not"},
        {{"exec", "--snapshot-entries=0", "--", "true"}, 2, "--snapshot-entries: '0' is not"},
        {{"exec", "--snapshot-entries=many", "--", "true"}, 2, "--snapshot-entries: 'many'"},
        {{"exec", "--no-snapshot", "--snapshot-stacks=python", "--", "true"},
         2,
         "--no-snapshot and --snapshot-stacks cannot be given together"},
        {{"frontier", "exec", "--snapshot-stacks=c", "--", "true"}, 2, "--snapshot-stacks: 'c'"},
        {{"frontier"}, 2, "frontier: give a scenario"},
        {{"frontier", "exec"}, 2, "no program to run"},
        {{"frontier", "exec", "--resolution=1MiB", "--", "true"},
         2,
         "--resolution: '1MiB' is under"},
        {{"frontier", "exec", "--confirm=x", "--", "true"}, 2, "--confirm: 'x'"},
        {{"frontier", "exec", "--at", "batch=8", "--", "true"}, 2, "--at needs --from"},
        {{"frontier", "exec", "--from", "batch=1,2", "--", "true"}, 2, "--from needs --at"},
        {{"frontier", "exec", "--from", "batch=1,2", "--at", "steps=8", "--", "true"},
         2,
         "give the same name"},
        {{"frontier", "exec", "--from", "batch=1", "--at", "batch=8", "--", "true"}, 2, "--from"},
        {{"frontier", "exec", "--from", "batch=1,2", "--at", "batch=8", "--", "true"},
         2,
         "the command has no {batch}"},
        {{"frontier", "exec", "--from", "batch=1,2", "--at", "batch=8", "--confirm", "2", "--",
          "true", "{batch}"},
         2,
         "--confirm: with --from"},
        {{"fit", "exec", "--budget", "1GiB", "--range", "batch=1..8", "--gpus", "0,1", "--devices",
          "0,1", "--", "true", "{batch}"},
         2,
         "--gpus: not with --devices"},
        {{"fit", "exec", "--budget", "1GiB", "--range", "batch=1..8", "--gpus", "0,x", "--", "true",
          "{batch}"},
         2,
         "--gpus: "},
        {{"frontier", "exec", "--gpus", "0,1", "--devices", "0,1", "--", "true"},
         2,
         "--gpus: not with --devices"},
        {{"exec", "--gpus", "0,1", "--", "true"}, 2, "--gpus: only with --check-remedy"},
        {{"fit", "exec", "--range", "batch=1..8", "--gpus-per-trial", "2", "--", "true", "{batch}"},
         2,
         "--gpus-per-trial: only with --gpus"},
        {{"exec", "--gpus", "0,1", "--check-remedy", "--devices", "0,1", "--", "true"},
         2,
         "--gpus: not with --devices"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "vae", "--", "true", "{batch}"},
         2,
         "--grid: 'vae' is not NAME=V1,V2"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "vae=on", "--", "true", "{batch}",
          "{vae}"},
         2,
         "vae has one value"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "vae=,on,", "--", "true", "{batch}",
          "{vae}"},
         2,
         "the value '' is given twice"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "batch=1,2", "--", "true", "{batch}"},
         2,
         "batch is already --range's name"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "vae=,on", "--", "true", "{batch}"},
         2,
         "--grid: 'vae=,on': the command has no {vae}"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "2x=a,b", "--", "true", "{batch}",
          "{2x}"},
         2,
         "'2x' is not a name"},
        {{"fit", "exec", "--range", "batch=1..8", "--markdown", "-", "--", "true", "{batch}"},
         2,
         "--markdown: only with --grid"},
        {{"fit", "exec", "--range", "batch=1..8", "--grid", "vae=,on", "--json", "-", "--markdown",
          "-", "--", "true", "{batch}", "{vae}"},
         2,
         "only one of --json and --markdown"},
    };
    all.insert(all.end(), rest.begin(), rest.end());
    const std::vector<BadInvocation> names = name_cases();
    all.insert(all.end(), names.begin(), names.end());
    const std::vector<BadInvocation> files = file_cases();
    all.insert(all.end(), files.begin(), files.end());
    return all;
  }();
  return cases;
}

std::string last_line(const std::string& text) {
  const std::vector<std::string> lines = last_lines(text, 1);
  return lines.empty() ? std::string() : lines.back();
}

TEST(CliErrors, TheCatalogueHasAtLeastFortyCases) {
  EXPECT_GE(catalogue().size(), 40U);
}

// One bad invocation run as a user would: its exit code, one line on stderr naming the problem,
// nothing on stdout.
void expect_refused(const BadInvocation& c) {
  const std::vector<std::string> argv = expand(c.args);
  std::string shown;
  for (std::size_t i = 1; i < argv.size(); ++i)
    shown += argv[i] + " ";
  SCOPED_TRACE("oomlab " + shown);
  const ChildResult r = run_child(argv, {.timeout = std::chrono::seconds(30)});
  ASSERT_FALSE(r.timed_out) << "hung";
  ASSERT_EQ(r.signal, 0) << "died of " << signal_name(r.signal) << "\n" << r.err_tail;
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err_tail;
  const std::string line = last_line(r.err_tail);
  EXPECT_TRUE(line.starts_with("oomlab: error: ")) << r.err_tail;
  EXPECT_NE(line.find(c.fragment), std::string::npos)
      << "expected '" << c.fragment << "' in: " << line;
  EXPECT_EQ(r.out, "") << "a refused invocation prints nothing on stdout";
}

TEST(CliErrors, EveryBadInvocationEndsWithItsCodeAndAOneLineMessage) {
  for (const BadInvocation& c : catalogue())
    expect_refused(c);
}

// A search doubles from its low end and a series is made along its values: 0 or a negative value
// is no batch size. Each is refused before any file is read or program run, naming the flag and
// the value, in the same words for 0 and for -4.
TEST(CliErrors, ASearchedOrMadeValueUnderOneIsRefusedNamingTheFlagAndTheValue) {
  const std::string snapshots = "@/snap_b{batch}.pickle";
  const std::string one_or_more = "must be a whole number of 1 or more";
  const std::vector<BadInvocation> cases = {
      {{"whatif", "--trace", snapshots, "--from", "batch=1,2", "--at", "batch=0"},
       2,
       "--at: batch=0: the value " + one_or_more},
      {{"whatif", "--trace", snapshots, "--from", "batch=1,2", "--at", "batch=-4"},
       2,
       "--at: batch=-4: the value " + one_or_more},
      {{"whatif", "--trace", snapshots, "--from", "batch=0,2", "--at", "batch=8"},
       2,
       "--from: batch=0,2: each value " + one_or_more + ", not 0"},
      {{"frontier", "exec", "--from", "batch=1,2", "--at", "batch=0", "--", "true", "{batch}"},
       2,
       "--at: batch=0: the value " + one_or_more},
      {{"frontier", "exec", "--from", "batch=-1,2", "--at", "batch=8", "--", "true", "{batch}"},
       2,
       "--from: batch=-1,2: each value " + one_or_more + ", not -1"},
      {{"fit", "leak", "-a", "sim", "--budget", "1GiB", "--range", "steps=0..8"},
       2,
       "--range: steps=0..8: LO " + one_or_more + ", not 0"},
      {{"fit", "exec", "--budget", "1GiB", "--range", "batch=0..8", "--", "true", "{batch}"},
       2,
       "--range: batch=0..8: LO " + one_or_more + ", not 0"},
      {{"fit", "replay", "--trace", snapshots, "--from", "batch=1,2", "--range", "batch=-4..8",
        "--budget", "24GiB"},
       2,
       "--range: batch=-4..8: LO " + one_or_more + ", not -4"},
      {{"fit", "replay", "--trace", snapshots, "--from", "batch=1,2", "--range", "batch=1..-3",
        "--budget", "24GiB"},
       2,
       "--range: batch=1..-3: HI " + one_or_more + ", not -3"},
  };
  for (const BadInvocation& c : cases)
    expect_refused(c);
}

}  // namespace
}  // namespace oomlab::cli
