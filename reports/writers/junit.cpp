#include "reports/writers/junit.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace oomlab {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows tab, newline and carriage return of the control characters only.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += c;
    }
  }
  return out;
}

void write_junit(std::ostream& out, std::string_view suite, std::span<const JUnitCase> cases) {
  const auto count = [&](JUnitCase::Result r) {
    return std::count_if(cases.begin(), cases.end(),
                         [r](const JUnitCase& c) { return c.result == r; });
  };
  double seconds = 0;
  for (const JUnitCase& c : cases)
    seconds += c.seconds;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format(
      "<testsuites name=\"oomlab\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\" "
      "time=\"{4:.3f}\">\n"
      "  <testsuite name=\"{5}\" tests=\"{0}\" failures=\"{1}\" errors=\"{2}\" skipped=\"{3}\" "
      "time=\"{4:.3f}\">\n",
      cases.size(), count(JUnitCase::Result::failure), count(JUnitCase::Result::error),
      count(JUnitCase::Result::skipped), seconds, xml_escape(suite));
  for (const JUnitCase& c : cases) {
    out << fmt::format(R"(    <testcase classname="{}" name="{}" time="{:.3f}")",
                       xml_escape(c.classname), xml_escape(c.name), c.seconds);
    const char* element = nullptr;
    switch (c.result) {
      case JUnitCase::Result::failure:
        element = "failure";
        break;
      case JUnitCase::Result::error:
        element = "error";
        break;
      case JUnitCase::Result::skipped:
        element = "skipped";
        break;
      case JUnitCase::Result::passed:
        break;
    }
    if (element == nullptr && c.details.empty()) {
      out << "/>\n";
      continue;
    }
    out << ">\n";
    if (element != nullptr) {
      out << fmt::format("      <{0} message=\"{1}\">{2}</{0}>\n", element, xml_escape(c.message),
                         xml_escape(c.details));
    } else {
      out << fmt::format("      <system-out>{}</system-out>\n", xml_escape(c.details));
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace oomlab
