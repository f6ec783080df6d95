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

// Every name the plugin registers is free in `registry` (built in or by an earlier plugin), or
// nothing of it is added.
void check_names_free(const std::filesystem::path& path, const Registry& staged,
                      const Registry& registry) {
  const auto taken = [&](std::string_view what, const std::string& name) {
    refuse(path, fmt::format("registers {} '{}', a name already taken (built in or by an earlier "
                             "plugin)",
                             what, name));
  };
  for (const Registry::Entry& e : staged.entries()) {
    if (registry.find(e.name) != nullptr) taken("scenario", e.name);
  }
  for (const BackendInfo& b : staged.backends()) {
    for (const BackendInfo& known : registry.backends()) {
      if (known.name == b.name) taken("backend", b.name);
    }
  }
  for (const trace::FormatInfo& f : staged.trace_formats()) {
    for (const trace::FormatInfo& known : registry.trace_formats()) {
      if (known.name == f.name) taken("trace format", f.name);
    }
  }
  for (const Framework& f : staged.frameworks()) {
    for (const Framework& known : registry.frameworks()) {
      if (known.name == f.name) taken("framework", f.name);
    }
  }
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
  // A framework brings its parts now: the catalogues it would have joined are already read.
  for (const Framework& f : staged.frameworks()) {
    for (auto* add : {f.add_backends, f.add_trace_formats, f.add_oom_dialects}) {
      if (add != nullptr) add(staged);
    }
  }
  if (staged.entries().empty() && staged.backends().empty() && staged.trace_formats().empty() &&
      staged.oom_dialects().empty()) {
    refuse(path, "registered no scenario (nor a backend, a trace format or an OOM dialect)");
  }
  check_names_free(path, staged, registry);
  std::vector<std::string> names;
  for (const Registry::Entry& e : staged.entries()) {
    registry.add(e.factory);
    names.push_back(e.name);
  }
  // The plugin's own numbers were the staged registry's: the real one numbers them anew.
  for (BackendInfo b : staged.backends()) {
    b.kind = BackendKind::registered;
    names.push_back(b.name);
    registry.add_backend(std::move(b));
  }
  for (trace::FormatInfo f : staged.trace_formats()) {
    f.format = trace::Format::registered;
    names.push_back(f.name);
    registry.add_trace_format(std::move(f));
  }
  for (const OomDialect& d : staged.oom_dialects())
    registry.add_oom_dialect(d);
  for (Framework f : staged.frameworks()) {
    f.add_backends = nullptr;  // added above
    f.add_trace_formats = nullptr;
    f.add_oom_dialects = nullptr;
    names.push_back(f.name);
    registry.add_framework(std::move(f));
  }
  return names;
}

}  // namespace oomlab
