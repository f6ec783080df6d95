// The `--json FILE|-` convention, and that of every flag that may take "-" (compare's --markdown
// and --junit): "-" sends the output to stdout alone, so the words a person reads go to stderr;
// a path is a file, written through io/output_file.hpp; "" is nothing.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "io/output_file.hpp"

namespace oomlab::cli {

[[nodiscard]] inline bool to_stdout(std::string_view flag_value) {
  return flag_value == "-";
}
[[nodiscard]] inline bool to_file(std::string_view flag_value) {
  return !flag_value.empty() && flag_value != "-";
}

// Where a command's words go when its JSON follows `json_flag`: stderr while stdout carries it.
[[nodiscard]] inline std::ostream& words_stream(std::string_view json_flag, std::ostream& out,
                                                std::ostream& err) {
  return to_stdout(json_flag) ? err : out;
}

// `text` to stdout or to the file the flag names; a file that cannot be written throws Error(io).
inline void emit_output(const std::string& flag_value, const std::string& text, std::ostream& out) {
  if (to_stdout(flag_value)) {
    out << text;
  } else if (to_file(flag_value)) {
    write_output_file(flag_value, text);
  }
}

}  // namespace oomlab::cli
