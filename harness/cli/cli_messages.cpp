#include "cli/cli_messages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "cli/parse.hpp"

namespace oomlab::cli {

namespace {

std::size_t utf8_length(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

std::string clip_word(std::string_view word, std::size_t limit) {
  std::size_t closers = 0;  // a closing quote or bracket, and the punctuation after it, stay
  while (closers < 3 && closers < word.size() &&
         std::string_view("'\")]:,;").find(word[word.size() - 1 - closers]) !=
             std::string_view::npos) {
    ++closers;
  }
  const std::string_view core = word.substr(0, word.size() - closers);
  if (core.size() <= limit) return std::string(word);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(core[cut]) & 0xC0U) == 0x80U)
    --cut;
  return fmt::format("{}...[{} characters]{}", core.substr(0, cut), utf8_length(core),
                     word.substr(core.size()));
}

// The command the parser was in: the subcommand given, else oomlab itself.
const CLI::App& command_of(const CLI::App& app) {
  const std::vector<CLI::App*> given = app.get_subcommands();
  return given.empty() ? app : *given.front();
}

bool is_top(const CLI::App& command) {
  return command.get_parent() == nullptr;
}

// "run: " before the message, nothing for oomlab's own options.
std::string prefix(const CLI::App& command) {
  return is_top(command) ? std::string() : command.get_name() + ": ";
}

std::string help_hint(const CLI::App& command) {
  return is_top(command) ? " (see oomlab --help)"
                         : fmt::format(" (see oomlab {} --help)", command.get_name());
}

std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames())
      names.push_back("--" + name);
    for (const std::string& name : option->get_snames())
      names.push_back("-" + name);
  }
  return names;
}

// SCENARIO, BASELINE CURRENT, PATHS...: what the command takes besides options.
std::string positionals(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    if (!option->get_positional()) continue;
    std::string name = option->get_name();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    names.push_back(option->get_expected_max() > 1 ? name + "..." : name);
  }
  return names.empty() ? std::string("no arguments, only options")
                       : fmt::format("{} and options", fmt::join(names, " "));
}

std::string unknown_option(const CLI::App& command, const std::string& given) {
  const std::string name = given.substr(0, given.find('='));
  const std::vector<std::string> names = option_names(command);
  std::string hint = did_you_mean(name, names);
  if (hint.empty()) hint = fmt::format(" ({} takes {})", command.get_name(), fmt::join(names, " "));
  return fmt::format("{}unknown option '{}'{}{}", prefix(command), name, hint, help_hint(command));
}

std::string lowered(std::string text) {
  if (!text.empty() && text.size() > 1 && std::islower(static_cast<unsigned char>(text[1])) != 0)
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// "NAME: rest" split at the first ": ".
std::pair<std::string, std::string> split_name(const std::string& message) {
  const auto colon = message.find(": ");
  if (colon == std::string::npos) return {std::string(), message};
  return {message.substr(0, colon), message.substr(colon + 2)};
}

std::string argument_mismatch(const std::string& message, const CLI::App& command) {
  const auto [name, rest] = split_name(message);
  if (rest.starts_with("At Most 1 required but received ")) {
    return fmt::format("{}{} is given {} times; give it once", prefix(command), name,
                       rest.substr(rest.rfind(' ') + 1));
  }
  if (rest.ends_with(" missing") && rest.find(" required ") != std::string::npos)
    return fmt::format("{}{} needs a value", prefix(command), name);
  return prefix(command) + lowered(message);
}

std::string retold(const CLI::ParseError& error, const CLI::App& command) {
  const std::string message = error.what();
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    if (is_top(command)) return "a command is required";
    const std::string name = message.substr(0, message.find(" is required"));
    return fmt::format("{}{} is required: oomlab {} takes {}", prefix(command), name,
                       command.get_name(), positionals(command));
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr)
    return argument_mismatch(message, command);
  if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    const auto at = message.find(" excludes ");
    if (at != std::string::npos) {
      return fmt::format("{}{} and {} cannot be given together", prefix(command),
                         message.substr(0, at), message.substr(at + 10));
    }
  }
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr &&
      message.starts_with("Could not convert: ")) {
    const std::string what = message.substr(19);
    const auto eq = what.find(" = ");
    if (eq != std::string::npos) {
      return fmt::format("{}{} is a flag and takes no value ('{}' given)", prefix(command),
                         what.substr(0, eq), what.substr(eq + 3));
    }
  }
  return prefix(command) + lowered(message);
}

}  // namespace

std::string clip_long_words(std::string_view message, std::size_t limit) {
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    if (message[i] == ' ') {
      out += message[i++];
      continue;
    }
    const std::size_t end = std::min(message.find(' ', i), message.size());
    out += clip_word(message.substr(i, end - i), limit);
    i = end;
  }
  return out;
}

std::string unexpected_arguments(const CLI::App& app) {
  const CLI::App& command = command_of(app);
  for (const CLI::App* level : {&command, &app}) {
    const std::vector<std::string> rest = level->remaining();
    if (rest.empty()) continue;
    const auto option = std::find_if(rest.begin(), rest.end(), [](const std::string& a) {
      return a.size() > 1 && a.front() == '-';
    });
    if (option != rest.end()) return unknown_option(*level, *option);
    if (is_top(*level))
      return fmt::format("unexpected argument '{}'{}", rest.front(), help_hint(*level));
    if (level->get_name() == "exec") {  // `oomlab exec python train.py`: the "--" forgotten
      return fmt::format(
          "{}unexpected argument '{}': put the program after '--' (oomlab exec "
          "[OPTIONS] -- {}){}",
          prefix(*level), rest.front(), rest.front(), help_hint(*level));
    }
    // `oomlab whatif snapshot.pickle`: the file named without the flag it needs.
    const CLI::Option* trace = level->get_option_no_throw("--trace");
    if (trace != nullptr && trace->get_required() && trace->count() == 0) {
      return fmt::format(
          "{}unexpected argument '{}': give the file with --trace (oomlab {} "
          "--trace {}){}",
          prefix(*level), rest.front(), level->get_name(), rest.front(), help_hint(*level));
    }
    return fmt::format("{}unexpected argument '{}': oomlab {} takes {}{}", prefix(*level),
                       rest.front(), level->get_name(), positionals(*level), help_hint(*level));
  }
  return {};
}

std::string parse_error_line(const CLI::ParseError& error, const CLI::App& app) {
  std::string line = unexpected_arguments(app);
  if (line.empty()) line = retold(error, command_of(app)) + help_hint(command_of(app));
  std::replace(line.begin(), line.end(), '\n', ' ');  // one line, whatever CLI11 wrote
  return clip_long_words(line);
}

}  // namespace oomlab::cli
