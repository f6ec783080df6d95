#include "exec/snapshot_shim.hpp"

#include <fmt/format.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp is POSIX

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "exec/shim_sources.hpp"  // generated from shim/*.py
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStatusFile = "status.jsonl";

// One line of the shim's status file.
struct ShimEvent {
  std::string event;
  std::string detail;
  std::string file;
  std::string version;   // a framework's
  std::string settings;  // a framework's allocator settings
};

std::string text_field(const nlohmann::json& line, const char* name) {
  const auto it = line.find(name);
  return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<ShimEvent> read_status(const fs::path& path) {
  std::vector<ShimEvent> events;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("event") || !j["event"].is_string()) continue;
    events.push_back({.event = j["event"].get<std::string>(),
                      .detail = text_field(j, "detail"),
                      .file = text_field(j, "file"),
                      .version = text_field(j, "version"),
                      .settings = text_field(j, "settings")});
  }
  return events;
}

const ShimEvent* first_of(const std::vector<ShimEvent>& events, std::string_view kind) {
  const auto it = std::find_if(events.begin(), events.end(),
                               [&](const ShimEvent& e) { return e.event == kind; });
  return it == events.end() ? nullptr : &*it;
}

// Why no snapshot was written, from the furthest the shim got in any process.
std::string why_none(const std::vector<ShimEvent>& events) {
  if (const ShimEvent* failed = first_of(events, "failed"))
    return fmt::format("the shim failed: {}", failed->detail);
  if (const ShimEvent* unsupported = first_of(events, "unsupported")) return unsupported->detail;
  if (first_of(events, "recording") != nullptr) {
    return "recording started, but no process wrote a snapshot: none ran out of memory, and they "
           "ended without Python's exit handlers (os._exit or a signal)";
  }
  for (const Framework& framework : Registry::global().frameworks()) {
    if (!framework.program_shim) continue;
    for (const auto& [event, why] : framework.program_shim->stops) {
      if (first_of(events, event) != nullptr) return why;
    }
  }
  if (first_of(events, "python") != nullptr)
    return "no framework exec instruments was imported by the program";
  return "no Python process of the program loaded oomlab's shim (not a Python program, or "
         "Python run with -E, -I or -S)";
}

}  // namespace

SnapshotShim::SnapshotShim(const SnapshotOptions& options, const fs::path& run_folder)
    : options_(options) {
  std::string pattern = (fs::temp_directory_path() / "oomlab-shim-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorKind::io, fmt::format("cannot make a temporary folder for the snapshot shim "
                                           "({}): {}",
                                           pattern, std::generic_category().message(errno)));
  }
  private_ = pattern;
  try {
    write_output_file(private_ / "sitecustomize.py", generated::kShimSitecustomize);
    write_output_file(private_ / "oomlab_shim.py", generated::kShimBase);
    for (const Framework& framework : Registry::global().frameworks()) {
      if (!framework.program_shim) continue;
      const ProgramShim& shim = *framework.program_shim;
      write_output_file(private_ / (shim.module + ".py"), shim.source);
      modules_ += (modules_.empty() ? "" : ",") + shim.module;
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(private_, ec);
    throw;
  }
  snapshots_ = !options.folder.empty() ? options.folder : run_folder;
  if (snapshots_.empty()) {
    snapshots_ = private_ / "snapshots";
    temporary_ = true;
  }
  // Made where it can be; where it cannot, the shim's own failure to write says why.
  std::error_code ec;
  fs::create_directories(snapshots_, ec);
  const fs::path absolute = fs::absolute(snapshots_, ec);  // the program may change folder
  if (!ec) snapshots_ = absolute;
}

SnapshotShim::~SnapshotShim() {
  std::error_code ec;
  fs::remove_all(private_, ec);
}

std::vector<std::pair<std::string, std::string>> SnapshotShim::environment(
    const std::optional<std::string>& inherited) const {
  std::string python_path = private_.string();
  if (inherited && !inherited->empty()) python_path += ":" + *inherited;  // "" would add the cwd
  std::vector<std::pair<std::string, std::string>> env{
      {"PYTHONPATH", python_path},
      {"OOMLAB_SHIM_MODULES", modules_},
      {"OOMLAB_SNAPSHOT_DIR", snapshots_.string()},
      {"OOMLAB_SNAPSHOT_STATUS", (private_ / kStatusFile).string()},
      {"OOMLAB_SNAPSHOT_STACKS", options_.python_stacks ? "python" : "none"}};
  if (options_.max_entries)
    env.emplace_back("OOMLAB_SNAPSHOT_ENTRIES", std::to_string(*options_.max_entries));
  return env;
}

SnapshotFindings SnapshotShim::findings() const {
  const std::vector<ShimEvent> events = read_status(private_ / kStatusFile);
  SnapshotFindings found;
  std::set<std::string> names;
  std::set<std::string> failures;
  for (const ShimEvent& e : events) {
    if ((e.event == "oom" || e.event == "exit") && !e.file.empty() &&
        e.file.find('/') == std::string::npos && fs::is_regular_file(snapshots_ / e.file))
      names.insert(e.file);
    if (e.event == "failed" && failures.insert(e.detail).second) found.failures.push_back(e.detail);
    const FrameworkSeen framework{
        .name = e.detail, .version = e.version, .allocator_settings = e.settings};
    if (e.event == "framework" && !e.detail.empty() &&
        std::find(found.frameworks.begin(), found.frameworks.end(), framework) ==
            found.frameworks.end())
      found.frameworks.push_back(framework);
  }
  for (const std::string& name : names)
    found.files.push_back(snapshots_ / name);
  if (found.files.empty()) found.note = why_none(events);
  return found;
}

}  // namespace oomlab
