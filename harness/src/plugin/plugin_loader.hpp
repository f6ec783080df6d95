// External scenarios: a shared library that exports
//   extern "C" void oomlab_register(oomlab::Registry&);
// and adds its scenarios there (docs/commands.md, "Plugins"). The loader keeps a plugin's problems
// to itself: a library that does not load, exports no oomlab_register, throws from it, registers
// nothing or takes a name already taken is refused with Error(input) naming the file, and the
// registry is left as it was. A plugin stays loaded for the life of the process (its factories live
// in it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "oomlab/registry.hpp"

namespace oomlab {

inline constexpr const char* kPluginEntryPoint = "oomlab_register";

// Loads `path` and adds its scenarios to `registry`; returns their names.
std::vector<std::string> load_plugin(const std::filesystem::path& path, Registry& registry);

}  // namespace oomlab
