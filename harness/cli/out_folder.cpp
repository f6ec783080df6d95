#include "cli/out_folder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "cli/output_flag.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// The folders claim_out_folder made (not found there) in this command.
std::vector<fs::path>& made_folders() {
  static std::vector<fs::path> folders;
  return folders;
}

// Why `path` cannot be written, in the system's words; empty when it can.
std::string unwritable(const fs::path& path) {
  if (::access(path.c_str(), W_OK) == 0) return {};
  return std::strerror(errno);  // NOLINT(concurrency-mt-unsafe): read at once, one thread
}

}  // namespace

void claim_out_folder(const fs::path& folder, bool force, const OutFolderKind& kind) {
  std::error_code ec;
  const auto held = std::find_if(kind.marks.begin(), kind.marks.end(), [&](std::string_view name) {
    return fs::exists(folder / name, ec);
  });
  if (held != kind.marks.end()) {
    if (!force) {
      throw_usage(fmt::format(
          "--out: {} already holds {} ({}): give a new folder, or --force to replace it",
          folder.string(), kind.what, *held));
    }
    for (const std::string_view name : kind.replaced) {
      if (fs::remove(folder / name, ec); ec) {
        throw Error(ErrorKind::io, fmt::format("--force: cannot remove {}: {}",
                                               (folder / name).string(), ec.message()));
      }
    }
  }
  // The folders this makes, the deepest first: the folder and each parent not there before.
  std::vector<fs::path> making;
  for (fs::path at = folder; !at.empty() && !fs::exists(at, ec); at = at.parent_path()) {
    making.push_back(at);
    if (at == at.parent_path()) break;
  }
  fs::create_directories(folder, ec);
  if (!ec) made_folders().insert(made_folders().end(), making.begin(), making.end());
  if (ec || !fs::is_directory(folder)) {
    throw Error(ErrorKind::io, fmt::format("--out: cannot create folder {}: {}", folder.string(),
                                           ec ? ec.message() : "a file of that name exists"));
  }
  if (const std::string why = unwritable(folder); !why.empty())
    throw Error(ErrorKind::io,
                fmt::format("--out: cannot write into {}: {}", folder.string(), why));
}

void remove_unused_out_folders() {
  for (const fs::path& folder : made_folders()) {
    std::error_code ec;
    if (fs::is_empty(folder, ec) && !ec) fs::remove(folder, ec);
  }
  made_folders().clear();
}

void forget_made_out_folders() {
  made_folders().clear();
}

void check_destination(std::string_view flag, const std::string& path) {
  if (!to_file(path)) return;
  const fs::path file(path);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::io, fmt::format("{}: cannot write {}: {}", flag, path, why));
  };
  std::error_code ec;
  if (fs::is_directory(file, ec)) refuse("it is a folder, not a file");
  if (!fs::is_directory(folder, ec)) refuse(fmt::format("no folder {}", folder.string()));
  // A file is written beside its target and renamed over it, so its folder must be writable;
  // a device or a FIFO (/dev/null, /dev/stdout) is written in place.
  const bool in_place = fs::exists(file, ec) && !fs::is_regular_file(file, ec);
  if (const std::string why = unwritable(in_place ? file : folder); !why.empty()) refuse(why);
}

}  // namespace oomlab::cli
