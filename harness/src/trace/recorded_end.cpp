// What the run record beside a snapshot says of how its program ended (oomlab/trace.hpp's
// RecordedEnd): summary.json of an `oomlab exec` run folder (docs/outputs.md), read only for the
// few fields that say it, and only when it lists the snapshot among the program's.
#include "trace/recorded_end.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "oomlab/units.hpp"

namespace oomlab::trace {

namespace fs = std::filesystem;

namespace {

std::string text_at(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An exec run's record (summary.json's "kind", or before it the scenario "exec").
bool program_record(const nlohmann::json& doc) {
  if (text_at(doc, "kind") == "program") return true;
  const auto scenario = doc.find("scenario");
  return scenario != doc.end() && scenario->is_object() && text_at(*scenario, "name") == "exec";
}

bool lists(const nlohmann::json& program, const fs::path& snapshot) {
  const auto files = program.find("snapshots");
  if (files == program.end() || !files->is_array()) return false;
  for (const nlohmann::json& file : *files) {
    if (file.is_string() && fs::path(file.get<std::string>()).filename() == snapshot.filename())
      return true;
  }
  return false;
}

}  // namespace

std::optional<RecordedEnd> recorded_end_beside(const fs::path& snapshot) {
  const fs::path record = snapshot.parent_path() / "summary.json";
  std::ifstream in(record, std::ios::binary);
  if (!in) return std::nullopt;
  // Not the user's input: a record that cannot be read says nothing, and the trace stands alone.
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object() || !program_record(doc)) return std::nullopt;
  const auto program = doc.find("program");
  if (program == doc.end() || !program->is_object() || !lists(*program, snapshot))
    return std::nullopt;
  RecordedEnd end{.record = record, .outcome = text_at(doc, "outcome")};
  if (const auto oom = doc.find("oom"); oom != doc.end() && oom->is_object()) {
    if (const auto said = oom->find("program"); said != oom->end() && said->is_object()) {
      end.reporter = text_at(*said, "framework");
      end.line = text_at(*said, "line");
      const auto library = said->find("library");
      end.library = library != said->end() && library->is_boolean() && library->get<bool>();
    }
  }
  if (end.line.empty()) end.line = text_at(doc, "error");
  if (const auto budget = doc.find("budget_bytes"); budget != doc.end() && budget->is_number())
    end.budget_bytes = budget->get<std::uint64_t>();
  return end;
}

std::string recorded_end_caveat(const RecordedEnd& end) {
  std::string how;
  if (end.outcome == "oom" && end.library) {
    how = fmt::format("ran out of memory in {}, beside the allocator this snapshot records",
                      end.reporter);
  } else if (end.outcome == "oom") {
    how = fmt::format(
        "ran out of memory{} without a refusal of the allocator this snapshot "
        "records",
        end.reporter.empty() ? "" : fmt::format(" in {}", end.reporter));
  } else {
    how = fmt::format("ended in {}", end.outcome.empty() ? "an unknown way" : end.outcome);
  }
  return fmt::format(
      "{} says the program {}{}{}: the snapshot stops where it died, and what it would have "
      "needed after that is not in it, so every frontier and every 'fits' read from it is a "
      "lower bound for the whole job",
      end.record.empty()
          ? std::string("its run")
          : fmt::format("the run record beside the snapshot ({})", end.record.string()),
      how,
      end.budget_bytes != 0 ? fmt::format(" under a budget of {}", format_bytes(end.budget_bytes))
                            : "",
      end.line.empty() ? "" : fmt::format(" (\"{}\")", end.line));
}

}  // namespace oomlab::trace
