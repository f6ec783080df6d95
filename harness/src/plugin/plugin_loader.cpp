#include "plugin/plugin_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <exception>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {

using RegisterFunction = void (*)(Registry&);

[[noreturn]] void refuse(const std::filesystem::path& path, std::string_view why) {
  throw Error(ErrorKind::input, fmt::format("--plugin {}: {}", path.string(), why));
}

}  // namespace

std::vector<std::string> load_plugin(const std::filesystem::path& path, Registry& registry) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) refuse(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) refuse(path, "is a folder, not a shared library");
  if (!std::filesystem::is_regular_file(path, ec)) refuse(path, "not a regular file");
  // A path without a slash would make dlopen search the library path: name this file.
  const std::filesystem::path file = path.has_parent_path() ? path : "." / path;
  void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();  // NOLINT(concurrency-mt-unsafe): the CLI's thread, at start
    refuse(path, fmt::format("cannot be loaded: {}", why != nullptr ? why : "unknown error"));
  }
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's contract
  const auto entry = reinterpret_cast<RegisterFunction>(dlsym(library, kPluginEntryPoint));
  if (entry == nullptr) {
    dlclose(library);
    refuse(path,
           fmt::format("not an oomlab plugin: it exports no extern \"C\" {}(oomlab::Registry&)",
                       kPluginEntryPoint));
  }
  // Into a registry of its own first: whatever goes wrong, the real one is untouched.
  Registry staged;
  try {
    entry(staged);
  } catch (const std::exception& e) {
    refuse(path, fmt::format("{} threw: {}", kPluginEntryPoint, e.what()));
  } catch (...) {
    refuse(path, fmt::format("{} threw something that is not a std::exception", kPluginEntryPoint));
  }
  if (staged.entries().empty()) refuse(path, "registered no scenario");
  std::vector<std::string> names;
  for (const Registry::Entry& e : staged.entries()) {
    if (registry.find(e.name) != nullptr) {
      refuse(path, fmt::format("registers scenario '{}', a name already taken (built in or by an "
                               "earlier plugin)",
                               e.name));
    }
    names.push_back(e.name);
  }
  for (const Registry::Entry& e : staged.entries())
    registry.add(e.factory);
  return names;
}

}  // namespace oomlab
