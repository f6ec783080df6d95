// `oomlab run`'s files: the run folder chosen and claimed before the run, and summary.json,
// --json, --csv and --junit written after it (--json - or --junit - on stdout) through
// io/output_file.hpp. A file that cannot be written is kept in OutputFailures: the result is
// printed all the same.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/output_failures.hpp"
#include "reports/run/summary_json.hpp"
#include "run/run_result.hpp"

namespace oomlab::cli {

// The files that make a folder a run's: --out refuses a folder holding one (without --force).
inline constexpr std::array<std::string_view, 3> kRunFolderFiles = {"summary.json", "events.csv",
                                                                    "soak.json"};

// --json, --csv and --junit looked at before the run: a run is not made to be lost at the end
// for want of a folder. Throws Error(usage) naming the flag, and when --json and --junit are both
// "-" (stdout carries one output alone).
void check_destinations(const RunOptions& options);

// The flag whose output stdout carries alone, "-": --junit's or --json's ("" when neither). The
// words a person reads go to stderr then (output_flag.hpp's words_stream).
[[nodiscard]] std::string_view stdout_output(const RunOptions& options);

// The run folder, made; none with --no-out. A folder that already holds a run is refused (exit 2)
// unless --force, which removes that run's files (and its reports) first.
[[nodiscard]] std::optional<std::filesystem::path> prepare_run_folder(const RunOptions& options,
                                                                      std::string_view allocator);

// Where a run's record goes.
struct RunRecord {
  const RunOptions& options;
  Invocation invocation;
  std::optional<std::filesystem::path> folder;
};

// `--json -` first, then summary.json, --json FILE, --csv and the human summary (unless quiet),
// which names only the files that were written.
void write_outputs(const RunResult& result, const RunRecord& record, std::ostream& out,
                   std::ostream& err, OutputFailures& failures);

// --junit: one testcase, passed when the run did what it was asked (a provoked OOM included);
// `path` "-": the XML alone on `out`.
void write_run_junit(const RunResult& result, const std::string& path, int code,
                     const std::string& why, std::ostream& out);

}  // namespace oomlab::cli
