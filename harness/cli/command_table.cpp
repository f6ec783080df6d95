#include "cli/command_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <list>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::cli {

void CommandTable::add(Command command) {
  if (std::any_of(commands_.begin(), commands_.end(),
                  [&](const Command& c) { return c.name == command.name; })) {
    throw Error(ErrorKind::internal, fmt::format("command '{}' is added twice", command.name));
  }
  const auto after = std::upper_bound(commands_.begin(), commands_.end(), command.place,
                                      [](int place, const Command& c) { return place < c.place; });
  commands_.insert(after, std::move(command));
}

void CommandTable::extend(CommandExtension extension) {
  extensions_.push_back(std::move(extension));
}

std::vector<std::string> CommandTable::names() const {
  std::vector<std::string> out;
  for (const Command& c : commands_)
    out.push_back(c.name);
  return out;
}

const CommandTable& command_table() {
  // Made again when a plugin has registered a framework since (--plugin, read before the line).
  static CommandTable table;
  static std::size_t frameworks = 0;
  const std::list<Framework>& registered = Registry::global().frameworks();
  if (table.commands().empty() || frameworks != registered.size()) {
    CommandTable t;
    add_engine_commands(t);
    for (const Framework& framework : registered) {
      if (framework.add_commands != nullptr) framework.add_commands(t);
    }
    table = std::move(t);
    frameworks = registered.size();
  }
  return table;
}

}  // namespace oomlab::cli
