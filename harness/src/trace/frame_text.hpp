// A frame as traces hold it, "name (file:line)", taken apart: its name, its file, an installed
// package's file by its import path, another by its last folders.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>

namespace oomlab::trace {

// "name (file:line)" -> file; "" when the frame has no place.
[[nodiscard]] inline std::string_view file_of(std::string_view frame) {
  const std::size_t open = frame.rfind(" (");
  const std::size_t colon = frame.rfind(':');
  if (open == std::string_view::npos || colon == std::string_view::npos || colon < open) return {};
  return frame.substr(open + 2, colon - open - 2);
}

// "name (file:line)" -> name.
[[nodiscard]] inline std::string_view name_of(std::string_view frame) {
  const std::size_t open = frame.rfind(" (");
  return open == std::string_view::npos ? frame : frame.substr(0, open);
}

// An installed package's file as its import path shows it ("diffusers/models/unets/x.py"); ""
// for a file in no site-packages or dist-packages folder.
[[nodiscard]] inline std::string_view package_path(std::string_view file) {
  for (const std::string_view root : {"/site-packages/", "/dist-packages/"}) {
    const std::size_t at = file.rfind(root);
    if (at != std::string_view::npos) return file.substr(at + root.size());
  }
  return {};
}

// A file outside the installed packages by its last three parts ("diffusers/models/resnet.py"
// of a PYTHONPATH folder, "data/programs/train.py").
[[nodiscard]] inline std::string_view last_parts(std::string_view file) {
  constexpr int kParts = 3;
  std::size_t at = file.size();
  for (int part = 0; part < kParts; ++part) {
    const std::size_t slash = at == 0 ? std::string_view::npos : file.rfind('/', at - 1);
    if (slash == std::string_view::npos) return file;
    at = slash;
  }
  return file.substr(at + 1);
}

// Whether `file` lies under one of `roots` (the program's own folders).
[[nodiscard]] inline bool under_roots(std::string_view file, std::span<const std::string> roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
    return !root.empty() && file.starts_with(root) &&
           (root.ends_with('/') || file.size() == root.size() || file[root.size()] == '/');
  });
}

}  // namespace oomlab::trace
