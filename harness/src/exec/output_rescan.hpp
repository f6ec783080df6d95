// A finished exec run re-read from the folder it kept: the program's output scanned again with
// this oomlab's dialects, so that its OOM line, its figures and the cause they give are today's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/oom_message.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// What the output files held: the OOM an OomScanner keeps (the first line, or a richer or surer
// later one), and how many OOM lines there were.
struct OutputRescan {
  std::optional<ProgramOom> oom;
  std::size_t oom_lines = 0;
  std::vector<std::filesystem::path> files;  // the files read, in order
};

// A framework's log that exec kept apart from the program's output (Framework::program_log).
struct KeptLog {
  std::filesystem::path file;
  std::optional<std::uint64_t> (*line_time)(std::string_view line) = nullptr;  // never null
};

// Reads `files` (missing ones skipped) line by line through one OomScanner; with `log`, its lines
// go back among them by their times: before a line of the files that carries one, the log's
// lines written up to it (a log line without its own time has the one before it; each stream's
// clock runs on past midnight, the output's from the log's first time), and the rest at the end.
[[nodiscard]] OutputRescan rescan_output(const std::vector<std::filesystem::path>& files,
                                         const KeptLog* log = nullptr);

// `run`'s OOM record made again from the output its folder kept (ProgramRun::stdout_file and
// stderr_file, named relative to `folder`, and a framework's log kept apart among them): the OOM
// line today's dialects find, its figures and
// the cause they give, its traceback; the moment stays the one the run sampled (its time, the
// program's memory, the device's free memory). A run that ended in an error whose output holds
// an OOM line this oomlab knows becomes an OOM. Returns what was done, in words, for the report
// ("the program's output (stdout.txt, stderr.txt) read again"), or why nothing could be.
std::string rediagnose_program_output(RunResult& run, const std::filesystem::path& folder);

}  // namespace oomlab
