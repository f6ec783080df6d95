// oomlab's command line, callable in-process (tests) as well as from main().
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace oomlab::cli {

// args[0] is the program name. Never throws: every failure becomes a message and an exit code.
int run_cli(const std::vector<std::string>& given, std::ostream& out, std::ostream& err);

// The --plugin libraries this process loaded (absolute paths), for the processes it starts.
std::vector<std::string>& loaded_plugins();

}  // namespace oomlab::cli
