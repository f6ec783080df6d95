// CLI11's complaints retold in oomlab's one-line style ("oomlab: error: run: unknown option
// '--budgt' (did you mean '--budget'?)"), and the cut that keeps any echoed argument short.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace oomlab::cli {

// The longest piece of user text an error message echoes; past it the text is cut with "...".
inline constexpr std::size_t kEchoLimit = 200;

// `message` with every run of non-blank characters longer than `limit` cut to its first `limit`
// characters (on a UTF-8 boundary), "..." and how many were left out; a closing quote or bracket
// of the run is kept.
[[nodiscard]] std::string clip_long_words(std::string_view message, std::size_t limit = kEchoLimit);

// Arguments the parser matched to nothing (left in `remaining()` of the app and its command):
// the first, as one line naming the command and, for an option, the closest of that command's
// own options. Empty when there are none.
[[nodiscard]] std::string unexpected_arguments(const CLI::App& app);

// A CLI11 parse error as one line: "COMMAND: what is wrong (see oomlab COMMAND --help)".
// Arguments left unmatched come first: `run --bogus` is about --bogus, not the missing scenario.
[[nodiscard]] std::string parse_error_line(const CLI::ParseError& error, const CLI::App& app);

}  // namespace oomlab::cli
