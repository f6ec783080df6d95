// Plugins: a shared library that exports
//   extern "C" void oomlab_register(oomlab::Registry&);
// and adds its scenarios, allocator backends, trace formats or OOM message dialects there
// (docs/commands.md, "Plugins"). The loader keeps a plugin's problems
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

// Loads `path` and adds what it registers to `registry`; returns the names. The caller reads the
// catalogues first (backend_catalog(), trace::formats()), so that a plugin's names are checked
// against every built-in one.
std::vector<std::string> load_plugin(const std::filesystem::path& path, Registry& registry);

}  // namespace oomlab
