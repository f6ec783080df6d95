// Output files that could not be written, kept while a command goes on: one failed file costs
// neither the others nor what the command prints, and the command ends with each reason on one
// line and kExitIo (README.md, "Exit codes").
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {

class OutputFailures {
 public:
  // Runs `write`; an Error(io) is kept, anything else passes. Whether it wrote.
  template <typename Write>
  bool attempt(Write&& write) {
    try {
      std::forward<Write>(write)();
      return true;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::io) throw;
      lines_.emplace_back(e.what());
      return false;
    }
  }
  void add(std::string line) { lines_.push_back(std::move(line)); }
  [[nodiscard]] bool empty() const { return lines_.empty(); }

  // Each failure as "oomlab: error: ..."; the command's own `code` when it is not 0 (a failed
  // check says more than a missing file), else kExitIo when a file failed.
  int report(std::ostream& err, int code) const {
    for (const std::string& line : lines_)
      err << fmt::format("oomlab: error: {}\n", line);
    if (code != kExitOk || lines_.empty()) return code;
    return kExitIo;
  }

 private:
  std::vector<std::string> lines_;
};

}  // namespace oomlab::cli
