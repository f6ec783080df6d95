// What the searches print and write, shared by frontier, frontier exec, fit and fit exec: one line
// per trial as it ends, the cards an answer fits, and the JSON to --json, --out and stdout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "run/boundary_search.hpp"
#include "run/fit.hpp"

namespace oomlab::cli {

// "  25,769,803,776 B (24.0 GiB)  oom (capacity)": a budget exact, then as people read it.
[[nodiscard]] std::string budget_trial_line(const Trial& t);
// A program's, with its role, time, peak and OOM line: "step   2,147,483,648 B (2.00 GiB) ...".
[[nodiscard]] std::string program_trial_line(const Trial& t);
// A fit's: "batch=32  completed  12.1 s  peak 2.71 GiB of 3.00 GiB".
[[nodiscard]] std::string value_trial_line(const std::string& name, const Trial& t);

// A fit's answer, for `subject` ("leak on sim", the command): the largest value that completes,
// what the value above it needed, the headroom, or why there is no answer; then --confirm's
// count and a contradiction between runs, each on its own line.
[[nodiscard]] std::string fit_answer(const FitResult& result, const std::string& subject);

// "holds on: T4, L4, ... (named cards, each its NVML total less what this device keeps back when
// idle: approximations)" or that none of the table's cards holds it.
[[nodiscard]] std::string cards_line(std::uint64_t bytes, std::uint64_t kept_back);

// --out: the folder made before the first trial; one holding `file_name` (an earlier search's
// frontier.json or fit.json) is refused unless `force`, which removes it and its reports.
void prepare_out_folder(const std::string& out, bool force, std::string_view file_name);
// The JSON on stdout (--json -), to --json FILE and to --out DIR/NAME.
void write_search_json(const std::string& json_flag, const std::string& out_folder,
                       const std::string& file_name, const std::string& text, std::ostream& out);

[[nodiscard]] std::string clip(const std::string& text, std::size_t most);

}  // namespace oomlab::cli
