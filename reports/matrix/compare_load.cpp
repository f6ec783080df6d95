// Reading what `compare` compares: a summary.json (oomlab.run.v1) or a matrix.json
// (oomlab.matrix.v1), checked field by field so that a bad file is refused with the place that
// is wrong rather than compared half-read.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include "exec/exec_run.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/run_report.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

using plain_json = nlohmann::json;  // unordered: its keys sorted
namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 6> kOutcomes = {"oom",         "completed", "error",
                                                       "interrupted", "timeout",   "crash"};

// The outcome a cell ended with, one of kOutcomes.
std::string outcome_of(const JsonFields& fields) {
  std::string outcome = fields.text("outcome");
  if (std::find(kOutcomes.begin(), kOutcomes.end(), outcome) == kOutcomes.end()) {
    fields.fail("outcome", fmt::format("an outcome (oom, completed, error, interrupted, timeout, "
                                       "crash), not '{}'",
                                       outcome));
  }
  return outcome;
}

std::string string_or(const plain_json& object, const char* name, std::string fallback) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

std::string budget_text(const plain_json& budget) {
  if (budget.is_string()) return budget.get<std::string>();
  if (budget.is_number_unsigned()) return format_bytes(budget.get<std::uint64_t>());
  return budget.dump();
}

// summary.oom, read as every report reads it; required when the outcome is oom.
std::optional<OomRecord> oom_of(const JsonFields& summary, const std::string& outcome) {
  if (outcome != "oom") return std::nullopt;
  if (!summary.has("oom")) summary.fail("oom", "the OOM record, since the outcome is oom");
  return read_oom(summary.object("oom"));
}

std::optional<Spread> spread_of(const JsonFields& spread, const char* name) {
  const std::optional<JsonFields> figures = spread.optional_object(name);
  if (!figures) return std::nullopt;
  Spread s;
  for (auto [field, value] : {std::pair{"min", &s.min}, {"median", &s.median}, {"max", &s.max}}) {
    const std::optional<double> number = figures->optional_number(field);
    if (!number) figures->fail(field, "a number");
    *value = *number;
  }
  return s;
}

// What made a cell fail, in one line: the error, the signal, or the child's last words.
std::string failure_text(const plain_json& cell, const plain_json& summary) {
  if (summary.is_object()) {
    if (const auto it = summary.find("error"); it != summary.end() && it->is_string())
      return it->get<std::string>();
  }
  std::string why;
  if (const auto it = cell.find("signal"); it != cell.end() && it->is_string())
    why = it->get<std::string>();
  if (const auto it = cell.find("last_lines");
      it != cell.end() && it->is_array() && !it->empty() && it->back().is_string()) {
    why += (why.empty() ? "" : ": ") + it->back().get<std::string>();
  }
  return why;
}

// A program run is keyed as matrix keys a program: scenario and allocator "exec", its command.
plain_json run_key(const JsonFields& doc, CompareCell& cell) {
  if (read_run_kind(doc) == RunKind::program) {
    const ProgramRun program = read_program(doc.object("program"), {});
    cell.frameworks = program.frameworks;
    cell.scenario = "exec";
    cell.allocator = "exec";
    return {{"scenario", cell.scenario},
            {"allocator", cell.allocator},
            {"options", plain_json::object()},
            {"params", {{"command", command_line(program.command)}}}};
  }
  const JsonFields scenario = doc.object("scenario");
  const JsonFields allocator = doc.object("allocator");
  cell.scenario = scenario.text("name");
  cell.allocator = allocator.text("name");
  plain_json key = {{"scenario", cell.scenario},
                    {"allocator", cell.allocator},
                    {"options", allocator.object("options").raw()},
                    {"params", scenario.object("params").raw()}};
  if (const std::optional<JsonFields> files = scenario.optional_object("files"))
    key["files"] = files->raw();
  return key;
}

CompareCell run_cell(const JsonFields& doc) {
  CompareCell cell;
  const std::uint64_t budget = doc.count("budget_bytes");
  cell.key = run_key(doc, cell);
  cell.key["budget"] = budget;
  cell.budget = format_bytes(budget);
  cell.outcome = outcome_of(doc);
  cell.oom = oom_of(doc, cell.outcome);
  cell.duration_ms = doc.optional_number("duration_ms").value_or(0);
  if (cell.outcome != "oom" && cell.outcome != "completed")
    cell.why = failure_text(plain_json::object(), doc.raw());
  return cell;
}

CompareCell matrix_cell(const JsonFields& value) {
  const plain_json& raw = value.raw();
  CompareCell cell;
  cell.key = value.object("key").raw();
  cell.scenario = string_or(raw, "scenario", string_or(cell.key, "scenario", "?"));
  cell.allocator = string_or(raw, "allocator", string_or(cell.key, "allocator", "?"));
  const auto budget = raw.find("budget");
  cell.budget = budget_text(budget != raw.end() ? *budget : cell.key.value("budget", plain_json()));
  cell.outcome = outcome_of(value);
  const std::optional<JsonFields> summary = value.optional_object("summary");
  if (summary) {
    if (const std::optional<JsonFields> program = summary->optional_object("program"))
      cell.frameworks = read_frameworks(*program);
  }
  if (cell.outcome == "oom") {
    if (!summary) value.fail("summary", "the run's summary, since the outcome is oom");
    cell.oom = oom_of(*summary, cell.outcome);
  }
  if (const std::optional<JsonFields> spread = value.optional_object("spread")) {
    cell.live_bytes_spread = spread_of(*spread, "oom_live_bytes");
    cell.step_spread = spread_of(*spread, "oom_step");
    cell.event_spread = spread_of(*spread, "oom_event");
  }
  cell.duration_ms = value.optional_number("duration_ms").value_or(0);
  if (cell.outcome != "oom" && cell.outcome != "completed")
    cell.why = failure_text(raw, summary ? summary->raw() : plain_json());
  return cell;
}

plain_json parse_json(std::string_view text, const std::string& name) {
  try {
    return plain_json::parse(text);
  } catch (const plain_json::parse_error& e) {
    // Line and column of the byte the parser stopped at; the detail without nlohmann's prefix.
    const std::size_t stop = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = text.substr(0, stop);
    const std::size_t line =
        1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t newline = before.rfind('\n');
    const std::size_t column = stop - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
    std::string detail = e.what();
    if (const auto at = detail.find("column "); at != std::string::npos) {
      if (const auto colon = detail.find(": ", at); colon != std::string::npos)
        detail.erase(0, colon + 2);
    }
    throw Error(ErrorKind::input,
                fmt::format("{}:{}:{}: not valid JSON: {}", name, line, column, detail));
  }
}

}  // namespace

CompareInput parse_compare_input(std::string_view text, const std::string& name) {
  const plain_json doc = parse_json(text, name);
  if (!doc.is_object()) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not an oomlab result: the top level is not a JSON object", name));
  }
  const JsonFields top(doc, name);
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    top.fail("schema", fmt::format("{} or {}", kRunSchema, kMatrixSchema));
  }
  if (*schema != kRunSchema && *schema != kMatrixSchema) {
    throw Error(ErrorKind::input,
                fmt::format("{}: schema '{}' is not one compare reads ({} or {})", name,
                            schema->get<std::string>(), kRunSchema, kMatrixSchema));
  }
  CompareInput input;
  input.path = name;
  input.environment = top.object("environment").raw();
  input.oomlab = doc.value("oomlab", plain_json());
  if (*schema == kRunSchema) {
    input.kind = "run";
    input.cells.push_back(run_cell(top));
    return input;
  }
  input.kind = "matrix";
  for (const JsonFields& cell : top.objects("cells")) {
    // A cell a stopped matrix never ran: absent from this side (the verdict says "missing").
    if (cell.raw().value("outcome", plain_json()) == "missing") continue;
    input.cells.push_back(matrix_cell(cell));
  }
  return input;
}

CompareInput load_compare_input(const fs::path& path) {
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    file = path / "matrix.json";
    if (!fs::exists(file, ec)) file = path / "summary.json";
    if (!fs::exists(file, ec)) {
      throw Error(
          ErrorKind::input,
          fmt::format("{}: the folder holds neither matrix.json nor summary.json", path.string()));
    }
  }
  if (fs::exists(file, ec) && !fs::is_regular_file(file, ec))  // a FIFO would block the read
    throw Error(ErrorKind::input, fmt::format("{}: not a regular file", file.string()));
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::input, fmt::format("{}: cannot read: {}", file.string(),
                                              std::generic_category().message(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::input, fmt::format("{}: cannot read", file.string()));
  return parse_compare_input(text.str(), file.string());
}

}  // namespace oomlab
