// `oomlab compare BASELINE CURRENT`: the tolerance parsed, both inputs read, the verdicts
// written where asked; exit 1 on any regression, 6 when baseline cells are missing from the
// current or nothing matched (README.md, "Exit codes").
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/output_failures.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab::cli {

namespace {

// "2%", "0.5%", "0%" as a relative tolerance (0.02, 0.005, 0). parse_percent refuses 0%, which
// here means "exactly the same point", so zero is let through first.
double parse_tolerance(std::string_view text) {
  try {
    std::string_view body = text;
    while (!body.empty() && body.front() == ' ')
      body.remove_prefix(1);
    while (!body.empty() && body.back() == ' ')
      body.remove_suffix(1);
    if (!body.empty() && body.front() == '-')
      throw_usage(fmt::format("'{}' must not be negative", text));
    if (body.size() > 1 && body.back() == '%') {
      const std::string_view number = body.substr(0, body.size() - 1);
      if (number.find_first_not_of("0.") == std::string_view::npos &&
          number.find('0') != std::string_view::npos &&
          std::count(number.begin(), number.end(), '.') <= 1)
        return 0.0;
    }
    return parse_percent(body).value / 100.0;
  } catch (const Error& e) {
    throw_usage(fmt::format("--tolerance: {} (e.g. --tolerance 2%)", e.what()));
  }
}

CompareInput load(std::string_view side, const std::string& path) {
  try {
    return load_compare_input(path);
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("{}: {}", side, e.what()));
  }
}

std::string junit_text(const Comparison& comparison) {
  std::ostringstream xml;
  const std::vector<JUnitCase> cases = compare_junit_cases(comparison);
  write_junit(xml, "oomlab.compare", cases);
  return xml.str();
}

// BASELINE CURRENT, exactly; more files are a fleet's.
void check_files(const CompareOptions& o) {
  for (const auto& [count, name] : {std::pair{0U, "baseline"}, {1U, "current"}}) {
    if (o.files.size() == count) {
      throw_usage(
          fmt::format("compare: {} is required: oomlab compare takes BASELINE CURRENT and "
                      "options (see oomlab compare --help)",
                      name));
    }
  }
  if (o.files.size() > 2) {
    throw_usage(
        fmt::format("compare: {} files given: compare takes BASELINE CURRENT (for the "
                    "runners of a fleet, give --fleet)",
                    o.files.size()));
  }
}

}  // namespace

int compare_command(const CompareOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.pick_baseline.empty()) return pick_baseline_command(options, out);
  const double tolerance = parse_tolerance(options.tolerance);
  const int on_stdout = static_cast<int>(to_stdout(options.json)) +
                        static_cast<int>(to_stdout(options.markdown)) +
                        static_cast<int>(to_stdout(options.junit));
  if (on_stdout > 1) throw_usage("only one of --json, --markdown and --junit can be '-' (stdout)");
  if (options.fleet) return compare_fleet_command(options, tolerance, out, err);
  check_files(options);
  CompareOptions o = options;
  o.baseline = options.files[0];
  o.current = options.files[1];
  const Comparison comparison =
      compare(load("baseline", o.baseline), load("current", o.current), tolerance);

  if (const std::string warning = environment_warning(comparison); !warning.empty()) {
    err << fmt::format("oomlab: warning: {}\n", warning);
  }
  if (const std::string warning = no_match_warning(comparison); !warning.empty()) {
    err << fmt::format("oomlab: warning: {}\n", warning);
  }
  OutputFailures failures;
  const auto emit = [&](const std::string& flag_value, const std::string& text) {
    failures.attempt([&] { emit_output(flag_value, text, out); });
  };
  if (!o.json.empty()) emit(o.json, compare_json(comparison).dump(2) + "\n");
  if (!o.markdown.empty()) emit(o.markdown, compare_markdown(comparison));
  if (!o.junit.empty()) emit(o.junit, junit_text(comparison));
  (on_stdout > 0 ? err : out) << compare_table(comparison);
  const std::string incomplete = incomplete_reason(comparison);
  if (!incomplete.empty()) {
    err << fmt::format(
        "oomlab: {}{}\n", incomplete,
        o.allow_missing ? " (--allow-missing: not a failure)" : " (exit 6 unless --allow-missing)");
  }
  int code = kExitOk;
  if (comparison.regressions() > 0) {
    code = kExitCheckFailed;
  } else if (!incomplete.empty() && !o.allow_missing) {
    code = kExitIncomplete;
  }
  return failures.report(err, code);
}

}  // namespace oomlab::cli
