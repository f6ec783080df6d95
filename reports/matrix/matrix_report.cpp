#include "reports/matrix/matrix_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "oomlab/error.hpp"
#include "record/formats.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

namespace {

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

std::optional<ReportSpread> read_spread(const JsonFields& spread, const std::string& key) {
  const auto figure = spread.optional_object(key);
  if (!figure) return std::nullopt;
  return ReportSpread{figure->count("min"), figure->count("median"), figure->count("max")};
}

// A cell's OOM point: from its summary when there is one, else from its first repeat.
std::optional<MatrixOomPoint> cell_oom(const JsonFields& cell) {
  if (const auto summary = cell.optional_object("summary")) {
    if (const auto oom = summary->optional_object("oom")) {
      const OomRecord o = read_oom(*oom);
      return MatrixOomPoint{.event = o.event,
                            .step = o.step,
                            .live_bytes = o.live_bytes,
                            .request_bytes = o.request_bytes,
                            .reserved_bytes = o.reserved_bytes,
                            .cause = std::string(to_string(o.diagnosis.cause))};
    }
  }
  if (!cell.has("repeats")) return std::nullopt;
  for (const JsonFields& repeat : cell.objects("repeats")) {
    if (!repeat.has("oom_live_bytes")) continue;
    MatrixOomPoint o;
    o.event = repeat.optional_count("oom_event").value_or(0);
    o.step = repeat.optional_count("oom_step").value_or(0);
    o.live_bytes = repeat.count("oom_live_bytes");
    o.request_bytes = repeat.optional_count("oom_request_bytes").value_or(0);
    return o;
  }
  return std::nullopt;
}

// A cell's or repeat's "dir": relative, and inside the matrix folder.
std::string inner_dir(const JsonFields& fields) {
  std::string dir = fields.optional_text("dir");
  const std::filesystem::path path(dir);
  const bool escapes =
      std::any_of(path.begin(), path.end(), [](const auto& part) { return part == ".."; });
  if (path.is_absolute() || escapes) fields.fail("dir", "a folder inside the matrix folder");
  return dir;
}

// What ended the child: the matrix writes a name ("SIGSEGV"); a number is accepted too.
std::string signal_text(const JsonFields& cell) {
  const auto it = cell.raw().find("signal");
  if (it == cell.raw().end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return fmt::format("signal {}", it->get<std::int64_t>());
  cell.fail("signal", "a signal name, a number or null");
}

bool holds_summary(const std::filesystem::path& matrix_dir, const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::is_regular_file(matrix_dir / dir / "summary.json", ec);
}

// Which folders have runs to report: the cell's own, else the repeat whose OOM point the cell
// shows (matrix.json keeps the median repeat's summary), else the first repeat that has one.
void find_reports(MatrixReportCell& c, const std::vector<JsonFields>& repeats,
                  const std::filesystem::path& matrix_dir) {
  std::string first;
  std::string same_point;
  for (const JsonFields& repeat : repeats) {
    const std::string dir = inner_dir(repeat);
    const bool has = holds_summary(matrix_dir, dir);
    if (repeats.size() > 1) c.repeat_report_dirs.push_back(has ? dir : "");
    if (!has) continue;
    if (first.empty()) first = dir;
    if (same_point.empty() && c.oom && repeat.optional_count("oom_event") == c.oom->event &&
        repeat.optional_count("oom_live_bytes") == c.oom->live_bytes) {
      same_point = dir;
    }
  }
  if (holds_summary(matrix_dir, c.dir)) {
    c.report_dir = c.dir;
  } else {
    c.report_dir = same_point.empty() ? first : same_point;
  }
}

MatrixReportCell read_cell(const JsonFields& cell, const std::filesystem::path& matrix_dir) {
  MatrixReportCell c;
  c.scenario = cell.text("scenario");
  c.allocator = cell.text("allocator");
  c.id = cell.has("id") ? cell.text("id") : c.scenario + "-" + c.allocator;
  c.outcome = cell.text("outcome");
  c.exit_code = cell.optional_integer("exit_code");
  c.signal = signal_text(cell);
  c.duration_ms = cell.optional_number("duration_ms").value_or(0);
  c.dir = inner_dir(cell);
  c.last_lines = cell.texts("last_lines");
  c.oom = cell_oom(cell);
  if (const auto summary = cell.optional_object("summary")) {
    if (read_run_kind(*summary) == RunKind::program) {  // a program's peak is its own field
      if (const auto program = summary->optional_object("program"))
        c.peak_live_bytes = program->optional_count("peak_bytes");
    } else if (const auto peak = summary->optional_object("peak")) {
      c.peak_live_bytes = peak->optional_count("live_bytes");
    }
  }
  c.repeats = 1;
  if (cell.has("repeats")) {
    const std::vector<JsonFields> repeats = cell.objects("repeats");
    c.repeats = std::max<std::size_t>(1, repeats.size());
    find_reports(c, repeats, matrix_dir);
  } else if (holds_summary(matrix_dir, c.dir)) {
    c.report_dir = c.dir;
  }
  if (const auto spread = cell.optional_object("spread")) {
    c.repeats = spread->optional_count("runs").value_or(c.repeats);
    c.oom_runs = spread->optional_count("oom_runs").value_or(0);
    c.oom_live_bytes = read_spread(*spread, "oom_live_bytes");
    c.oom_step = read_spread(*spread, "oom_step");
    c.oom_event = read_spread(*spread, "oom_event");
  }
  return c;
}

// A config value as the user gave it: the matrix keeps some as text ("1") and some as numbers.
std::string as_asked(const JsonFields& config, const std::string& key) {
  const auto it = config.raw().find(key);
  if (it == config.raw().end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return it->dump();
  config.fail(key, "a string or a number");
}

}  // namespace

MatrixReport load_matrix_report(const std::filesystem::path& path) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(path, ec);
  const std::filesystem::path file = is_dir ? path / "matrix.json" : path;
  const nlohmann::json doc = read_json_file(file);
  const JsonFields top(doc, file);
  if (top.optional_text("schema") != kMatrixSchema) {
    top.fail("schema", fmt::format("\"{}\" (a matrix.json)", kMatrixSchema));
  }
  MatrixReport m;
  m.dir = file.parent_path();
  m.environment = read_environment(top);
  if (const auto config = top.optional_object("config")) {
    m.scenarios = config->texts("scenarios");
    m.allocators = config->texts("allocators");
    m.budget = as_asked(*config, "budget");
    m.seed = as_asked(*config, "seed");
    m.repeat = as_asked(*config, "repeat");
  }
  for (const JsonFields& cell : top.objects("cells")) {
    m.cells.push_back(read_cell(cell, m.dir));
    add_unique(m.scenarios, m.cells.back().scenario);
    add_unique(m.allocators, m.cells.back().allocator);
  }
  return m;
}

const MatrixReportCell* find_cell(const MatrixReport& matrix, const std::string& scenario,
                                  const std::string& allocator) {
  const auto it =
      std::find_if(matrix.cells.begin(), matrix.cells.end(), [&](const MatrixReportCell& c) {
        return c.scenario == scenario && c.allocator == allocator;
      });
  return it == matrix.cells.end() ? nullptr : &*it;
}

}  // namespace oomlab
