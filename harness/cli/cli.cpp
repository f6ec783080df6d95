#include "cli/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "allocators/backends.hpp"
#include "cli/cli_messages.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exec_cli.hpp"
#include "cli/help_text.hpp"
#include "cli/out_folder.hpp"
#include "cli/parse.hpp"
#include "cli/scenario_cli.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "plugin/plugin_loader.hpp"

namespace oomlab::cli {

std::vector<std::string>& loaded_plugins() {
  static std::vector<std::string> paths;
  return paths;
}

namespace {

constexpr std::string_view kDescription =
    "oomlab reproduces GPU out-of-memory failures on purpose: a scenario allocates in a pattern "
    "real programs produce, against a real allocator (cudaMalloc, cudaMallocAsync pools, "
    "managed memory) or the host-side model 'sim', and oomlab records where, when and why it ran "
    "out of memory.";

// Every command of the table on `app`, each with the run its flags will have filled; the
// frameworks' flags on the engine's commands beside them.
struct Built {
  std::vector<std::pair<CLI::App*, CommandRun>> commands;
  std::vector<std::pair<CLI::App*, CommandTakeover>> takeovers;
  std::vector<std::string> plugins;  // --plugin, for --help: taken out of the line before
};

void build_app(CLI::App& app, Built& built) {
  app.description(std::string(kDescription));
  app.set_version_flag("--version", version_text());
  // Never seen by the parser (run_cli loads and removes it first); here for --help.
  app.add_option("--plugin", built.plugins,
                 "PATH.so: load external scenarios (extern \"C\" void oomlab_register(oomlab::"
                 "Registry&)); repeatable, and may stand anywhere on the line");
  app.require_subcommand(1, 1);
  app.footer(top_footer());
  const CommandTable& table = command_table();
  for (const Command& command : table.commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    built.commands.emplace_back(sub, command.define(*sub));
  }
  for (const CommandExtension& extension : table.extensions()) {
    for (const auto& [sub, run] : built.commands) {
      if (sub->get_name() == extension.command)
        built.takeovers.emplace_back(sub, extension.define(*sub));
    }
  }
  // What matches nothing is kept (remaining()) and explained by cli_messages, not by CLI11.
  app.allow_extras();
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->allow_extras();
}

int exit_code_for_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::usage:
    case ErrorKind::input:
      return kExitUsage;
    case ErrorKind::no_device:
      return kExitNoDevice;
    case ErrorKind::io:
      return kExitIo;
    default:
      return kExitCheckFailed;
  }
}

// `oomlab rnu` gets a suggestion rather than CLI11's "arguments were not expected".
bool unknown_command(const std::vector<std::string>& args, std::ostream& err) {
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return false;
  const std::vector<std::string> commands = command_table().names();
  if (std::find(commands.begin(), commands.end(), args[1]) != commands.end()) return false;
  err << "oomlab: error: "
      << clip_long_words(fmt::format("unknown command '{}'{} (commands: {})", args[1],
                                     did_you_mean(args[1], commands), fmt::join(commands, ", ")))
      << '\n';
  return true;
}

// `oomlab run fragmentation --help` explains that scenario, not only the flags.
void tailor_run_help(CLI::App& app, const std::vector<std::string>& args) {
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "run" && Registry::global().find(args[i + 1]) != nullptr) {
      app.get_subcommand("run")->footer(scenario_help(args[i + 1]) + "\n" + run_footer());
      return;
    }
  }
}

// Takes every `--plugin PATH` / `--plugin=PATH` out of the arguments, wherever it stands, and
// loads the library; what remains goes to the parser.
std::vector<std::string> load_plugins(const std::vector<std::string>& args) {
  static std::vector<std::string> loaded_before;  // in this process (run_cli called again: tests)
  loaded_plugins().clear();
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--plugin") {
      if (i + 1 == args.size()) throw_usage("--plugin: needs the path of a shared library");
      path = args[++i];
    } else if (args[i].starts_with("--plugin=")) {
      path = args[i].substr(9);
    } else {
      rest.push_back(args[i]);
      continue;
    }
    if (path.empty()) throw_usage("--plugin: needs the path of a shared library");
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
    const std::string key = ec ? path : canonical.string();
    if (std::find(loaded_before.begin(), loaded_before.end(), key) == loaded_before.end()) {
      // The built-in catalogues first: a plugin's names are checked against all of them.
      static_cast<void>(backend_catalog());
      static_cast<void>(trace::formats());
      static_cast<void>(load_plugin(path, Registry::global()));
      loaded_before.push_back(key);
    }
    loaded_plugins().push_back(key);
  }
  return rest;
}

// The command given, run: a framework's takeover of it first, where one of its flags was given.
int dispatch(const Built& built, const CommandCall& call) {
  for (const auto& [sub, takeover] : built.takeovers) {
    if (!sub->parsed()) continue;
    if (const std::optional<int> code = takeover(call)) return *code;
  }
  for (const auto& [sub, run] : built.commands) {
    if (sub->parsed()) return run(call);
  }
  throw Error(ErrorKind::internal, "no command was parsed");
}

}  // namespace

int run_cli(const std::vector<std::string>& given, std::ostream& out, std::ostream& err) {
  if (given.empty()) return kExitUsage;  // not even a program name: nothing to say it to
  // --plugin loads before anything is parsed: its scenarios are then known like built-ins.
  std::vector<std::string> args;
  try {
    args = load_plugins(given);
  } catch (const Error& e) {
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return kExitUsage;
  }
  if (unknown_command(args, err)) return kExitUsage;
  const std::vector<std::string> program = take_program(args);
  CLI::App app("oomlab", "oomlab");
  Built built;
  build_app(app, built);
  tailor_run_help(app, args);
  std::vector<std::string> reversed(args.rbegin(),
                                    args.rend() - 1);  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* asked = &app;  // the innermost command given: `frontier exec --help`
    while (!asked->get_subcommands().empty())
      asked = asked->get_subcommands().front();
    out << asked->help();
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << version_text() << '\n';
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (args.size() == 1) {
      err << app.help();
      return kExitUsage;
    }
    err << "oomlab: error: " << parse_error_line(e, app) << '\n';
    return kExitUsage;
  }
  if (const std::string unexpected = unexpected_arguments(app); !unexpected.empty()) {
    err << "oomlab: error: " << clip_long_words(unexpected) << '\n';
    return kExitUsage;
  }
  forget_made_out_folders();
  try {
    const int code = dispatch(built, {.argv = args, .program = program, .out = out, .err = err});
    if (code == kExitOk) {
      forget_made_out_folders();
    } else {
      remove_unused_out_folders();  // only empty ones: a result written there stays
    }
    return code;
  } catch (const Error& e) {
    remove_unused_out_folders();
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return exit_code_for_error(e);
  } catch (const std::exception& e) {
    remove_unused_out_folders();
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return kExitCheckFailed;
  }
}

}  // namespace oomlab::cli
