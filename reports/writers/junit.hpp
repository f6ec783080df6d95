// JUnit XML, the format every CI system shows natively: one <testsuite>, one <testcase> per run,
// matrix cell or compared cell. `run`, `matrix` and `compare` write it with --junit FILE.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace oomlab {

struct JUnitCase {
  enum class Result : std::uint8_t { passed, failure, error, skipped };
  std::string classname;  // e.g. "oomlab.fragmentation"
  std::string name;       // e.g. "async"
  double seconds = 0.0;
  Result result = Result::passed;
  std::string message;  // one line: why it failed or was skipped
  std::string details;  // the body of <failure>/<error>, or <system-out> when it passed
};

void write_junit(std::ostream& out, std::string_view suite, std::span<const JUnitCase> cases);

// Text made safe for XML character data and attribute values (control characters dropped).
[[nodiscard]] std::string xml_escape(std::string_view text);

}  // namespace oomlab
