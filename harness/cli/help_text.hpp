// The footers of `oomlab --help` and of each command's --help: how to read the output, examples
// that run as written (given the files they name), and the exit codes.
#pragma once

#include <string>

namespace oomlab::cli {

[[nodiscard]] std::string top_footer();
[[nodiscard]] std::string run_footer();  // examples and exit codes; the scenario overview follows
[[nodiscard]] std::string frontier_footer();
[[nodiscard]] std::string exec_footer();
[[nodiscard]] std::string frontier_exec_footer();
[[nodiscard]] std::string fit_footer();
[[nodiscard]] std::string fit_exec_footer();
[[nodiscard]] std::string matrix_footer();
[[nodiscard]] std::string report_footer();
[[nodiscard]] std::string compare_footer();
[[nodiscard]] std::string list_footer();
[[nodiscard]] std::string info_footer();

}  // namespace oomlab::cli
