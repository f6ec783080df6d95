// Reading what `compare` compares: a summary.json (oomlab.run.v1) or a matrix.json
// (oomlab.matrix.v1), checked field by field so that a bad file is refused with the place that
// is wrong rather than compared half-read.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/compare.hpp"

namespace oomlab {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 6> kOutcomes = {"oom",         "completed", "error",
                                                       "interrupted", "timeout",   "crash"};

// Reads fields of one file; every refusal names the file and the field's place in it.
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(std::string_view where, std::string_view what) const {
    throw Error(ErrorKind::input, where.empty() ? fmt::format("{}: {}", file_, what)
                                                : fmt::format("{}: {}: {}", file_, where, what));
  }

  const json& member(const json& object, std::string_view where, const char* name) const {
    const auto it = object.find(name);
    if (it == object.end()) fail(where, fmt::format("no \"{}\"", name));
    return *it;
  }

  const json& object(const json& object, std::string_view where, const char* name) const {
    const json& value = member(object, where, name);
    if (!value.is_object()) fail(place(where, name), "expected an object");
    return value;
  }

  std::string string(const json& object, std::string_view where, const char* name) const {
    const json& value = member(object, where, name);
    if (!value.is_string()) fail(place(where, name), "expected a string");
    return value.get<std::string>();
  }

  std::uint64_t count(const json& object, std::string_view where, const char* name) const {
    const json& value = member(object, where, name);
    if (!value.is_number_unsigned() &&
        !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
      fail(place(where, name), "expected a whole number of at least 0");
    return value.get<std::uint64_t>();
  }

  double number_or(const json& object, const char* name, double fallback) const {
    const auto it = object.find(name);
    return it != object.end() && it->is_number() ? it->get<double>() : fallback;
  }

  std::string outcome(const json& object, std::string_view where) const {
    std::string outcome = string(object, where, "outcome");
    if (std::find(kOutcomes.begin(), kOutcomes.end(), outcome) == kOutcomes.end()) {
      fail(
          place(where, "outcome"),
          fmt::format("'{}' is not an outcome (oom, completed, error, interrupted, timeout, crash)",
                      outcome));
    }
    return outcome;
  }

  static std::string place(std::string_view where, std::string_view name) {
    return where.empty() ? std::string(name) : fmt::format("{}.{}", where, name);
  }

 private:
  const std::string& file_;
};

std::string string_or(const json& object, const char* name, std::string fallback) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

std::string budget_text(const json& budget) {
  if (budget.is_string()) return budget.get<std::string>();
  if (budget.is_number_unsigned()) return format_bytes(budget.get<std::uint64_t>());
  return budget.dump();
}

// summary.oom, required when the outcome is oom.
std::optional<OomPoint> oom_point(const Reader& r, const json& summary, std::string_view where,
                                  const std::string& outcome) {
  if (outcome != "oom") return std::nullopt;
  const json& oom = r.member(summary, where, "oom");
  if (!oom.is_object())
    r.fail(Reader::place(where, "oom"), "the outcome is oom but there is no OOM record");
  const std::string at = Reader::place(where, "oom");
  return OomPoint{.live_bytes = r.count(oom, at, "live_bytes"),
                  .step = r.count(oom, at, "step"),
                  .event = r.count(oom, at, "event")};
}

std::optional<Spread> spread_of(const Reader& r, const json& spread, std::string_view where,
                                const char* name) {
  const auto it = spread.find(name);
  if (it == spread.end() || it->is_null()) return std::nullopt;
  const std::string at = Reader::place(where, name);
  if (!it->is_object()) r.fail(at, "expected an object with min, median and max");
  Spread s;
  for (auto [field, value] : {std::pair{"min", &s.min}, {"median", &s.median}, {"max", &s.max}}) {
    const json& number = r.member(*it, at, field);
    if (!number.is_number()) r.fail(Reader::place(at, field), "expected a number");
    *value = number.get<double>();
  }
  return s;
}

// What made a cell fail, in one line: the error, the signal, or the child's last words.
std::string failure_text(const json& cell, const json& summary) {
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

CompareCell run_cell(const Reader& r, const json& doc) {
  const json& scenario = r.object(doc, "", "scenario");
  const json& allocator = r.object(doc, "", "allocator");
  CompareCell cell;
  cell.scenario = r.string(scenario, "scenario", "name");
  cell.allocator = r.string(allocator, "allocator", "name");
  const std::uint64_t budget = r.count(doc, "", "budget_bytes");
  cell.key = {{"scenario", cell.scenario},
              {"allocator", cell.allocator},
              {"options", r.object(allocator, "allocator", "options")},
              {"params", r.object(scenario, "scenario", "params")},
              {"budget", budget}};
  if (const auto files = scenario.find("files"); files != scenario.end()) {
    if (!files->is_object()) r.fail("scenario.files", "expected an object");
    cell.key["files"] = *files;
  }
  cell.budget = format_bytes(budget);
  cell.outcome = r.outcome(doc, "");
  cell.oom = oom_point(r, doc, "", cell.outcome);
  cell.duration_ms = r.number_or(doc, "duration_ms", 0);
  if (cell.outcome != "oom" && cell.outcome != "completed")
    cell.why = failure_text(json::object(), doc);
  return cell;
}

CompareCell matrix_cell(const Reader& r, const json& value, std::size_t index) {
  const std::string where = fmt::format("cells[{}]", index);
  if (!value.is_object()) r.fail(where, "expected an object");
  CompareCell cell;
  cell.key = r.object(value, where, "key");
  cell.scenario = string_or(value, "scenario", string_or(cell.key, "scenario", "?"));
  cell.allocator = string_or(value, "allocator", string_or(cell.key, "allocator", "?"));
  const auto budget = value.find("budget");
  cell.budget = budget_text(budget != value.end() ? *budget : cell.key.value("budget", json()));
  cell.outcome = r.outcome(value, where);
  const json& summary = r.member(value, where, "summary");
  if (!summary.is_object() && !summary.is_null())
    r.fail(where + ".summary", "expected an object or null");
  if (cell.outcome == "oom") {
    if (!summary.is_object())
      r.fail(where + ".summary", "the outcome is oom but the summary is null");
    cell.oom = oom_point(r, summary, where + ".summary", cell.outcome);
  }
  if (const auto spread = value.find("spread"); spread != value.end() && !spread->is_null()) {
    const std::string at = where + ".spread";
    if (!spread->is_object()) r.fail(at, "expected an object or null");
    cell.live_bytes_spread = spread_of(r, *spread, at, "oom_live_bytes");
    cell.step_spread = spread_of(r, *spread, at, "oom_step");
    cell.event_spread = spread_of(r, *spread, at, "oom_event");
  }
  cell.duration_ms = r.number_or(value, "duration_ms", 0);
  if (cell.outcome != "oom" && cell.outcome != "completed") cell.why = failure_text(value, summary);
  return cell;
}

json parse_json(std::string_view text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
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
  const json doc = parse_json(text, name);
  const Reader r(name);
  if (!doc.is_object()) r.fail("", "not an oomlab result: the top level is not a JSON object");
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    r.fail("", fmt::format("no \"schema\": expected {} or {}", kRunSchema, kMatrixSchema));
  }
  if (*schema != kRunSchema && *schema != kMatrixSchema) {
    r.fail("", fmt::format("schema '{}' is not one compare reads ({} or {})",
                           schema->get<std::string>(), kRunSchema, kMatrixSchema));
  }
  CompareInput input;
  input.path = name;
  input.environment = r.object(doc, "", "environment");
  input.oomlab = doc.value("oomlab", json());
  if (*schema == kRunSchema) {
    input.kind = "run";
    input.cells.push_back(run_cell(r, doc));
  } else {
    input.kind = "matrix";
    const json& cells = r.member(doc, "", "cells");
    if (!cells.is_array()) r.fail("cells", "expected an array");
    for (std::size_t i = 0; i < cells.size(); ++i) {
      // A cell a stopped matrix never ran: absent from this side (the verdict says "missing").
      if (cells[i].is_object() && cells[i].value("outcome", json()) == "missing") continue;
      input.cells.push_back(matrix_cell(r, cells[i], i));
    }
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
    throw Error(ErrorKind::input,
                fmt::format("{}: cannot read: {}", file.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::input, fmt::format("{}: cannot read", file.string()));
  return parse_compare_input(text.str(), file.string());
}

}  // namespace oomlab
