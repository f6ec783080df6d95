// The command line's commands, each in one entry: its name, what it does in a line, its place in
// `oomlab --help`, how it adds its flags (CLI11's App: a command's own subcommand) and what runs
// it. The engine's are added by the CLI; a framework's, and the flags it adds to the engine's
// commands, by its own face through Framework::add_commands, a plugin's too: the CLI names no
// framework, and a command's name is written once.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace oomlab::cli {

// What a parsed command is run with.
struct CommandCall {
  const std::vector<std::string>& argv;     // the command line, without the program's words
  const std::vector<std::string>& program;  // what followed "--" (exec's program), else empty
  std::ostream& out;
  std::ostream& err;
};
using CommandRun = std::function<int(const CommandCall&)>;

struct Command {
  std::string name;     // "run", "whatif"
  std::string summary;  // one line, for `oomlab --help`
  int place = 0;        // the smallest first in `oomlab --help`
  // Adds its options to `app` (its own subcommand) and returns what runs it once the line is
  // parsed: the options it fills live as long as that.
  std::function<CommandRun(CLI::App& app)> define;
};

// Flags a framework adds to an engine command, and the run that takes the command over when one
// of them was given (none: the command runs as it would).
using CommandTakeover = std::function<std::optional<int>(const CommandCall&)>;
struct CommandExtension {
  std::string command;  // the engine command's name ("fit")
  std::function<CommandTakeover(CLI::App& app)> define;
};

// A kind of result folder a framework's command writes (whatif's whatif.json), which `oomlab
// report` then reports: the file that marks it, its schema, what it is, and its writer.
struct ReportKind {
  std::string file;    // "whatif.json"
  std::string schema;  // "oomlab.whatif.v1": the file renamed is known by it
  std::string name;    // "whatif", as "a whatif" and "whatif folders" say it
  // report.html and report.md of the result `file` into `out_dir`; the paths written.
  std::vector<std::filesystem::path> (*write)(const std::filesystem::path& file,
                                              const std::filesystem::path& out_dir) = nullptr;
};

// `fit replay --from ... --cards`: a table a framework's face makes from the series the engine
// read and aligned (cli/command_table.hpp's SeriesTableCall: the engine's own types).
struct SeriesTableCall;
using SeriesTableRun = std::function<int(const SeriesTableCall&)>;

class CommandTable {
 public:
  // Error(internal) for a name already taken.
  void add(Command command);
  void extend(CommandExtension extension);
  void add_report_kind(ReportKind kind) { report_kinds_.push_back(std::move(kind)); }
  // The table of the snapshots whose allocator `backend` models (RecordedSettings::backend).
  void set_series_table(std::string backend, SeriesTableRun run) {
    series_tables_.insert_or_assign(std::move(backend), std::move(run));
  }
  // Null where no framework makes a table for that backend's snapshots.
  [[nodiscard]] const SeriesTableRun* series_table(std::string_view backend) const {
    const auto it = series_tables_.find(backend);
    return it == series_tables_.end() ? nullptr : &it->second;
  }
  [[nodiscard]] const std::vector<ReportKind>& report_kinds() const { return report_kinds_; }
  [[nodiscard]] const std::vector<Command>& commands() const { return commands_; }
  [[nodiscard]] const std::vector<CommandExtension>& extensions() const { return extensions_; }
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::vector<Command> commands_;  // by place
  std::vector<CommandExtension> extensions_;
  std::vector<ReportKind> report_kinds_;
  std::map<std::string, SeriesTableRun, std::less<>> series_tables_;
};

}  // namespace oomlab::cli
