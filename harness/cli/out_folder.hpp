// The one rule for every command's --out folder and output file, checked before the work: a
// folder that holds an earlier result of the same kind is refused (exit 2) unless --force, which
// removes that result's files first; a folder or file that cannot be written is Error(io) (exit
// 5) naming the system's own reason ("Read-only file system", "Permission denied").
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace oomlab::cli {

// What makes a folder hold a result, and what --force removes of it.
struct OutFolderKind {
  std::string_view what;                       // "a run", "a matrix", "a frontier"
  std::span<const std::string_view> marks;     // any of these present: the folder holds one
  std::span<const std::string_view> replaced;  // removed by --force (its reports too)
};

// The folder made and writable; refused as above.
void claim_out_folder(const std::filesystem::path& folder, bool force, const OutFolderKind& kind);

// The folders claim_out_folder made since the last call (the folder and the parents it made),
// removed where still empty, the deepest first: a command that fails before it writes there (a
// trace refused, a search stopped at its start) leaves no empty folder. run_cli calls it when a
// command fails or ends with another code than 0, forget_made_out_folders when one succeeds.
void remove_unused_out_folders();
void forget_made_out_folders();

// An output file a flag names ("--json", "FILE"): its folder exists and can be written, and it
// is not itself a folder; "" and "-" are not files. Error(io) naming the flag and the reason.
void check_destination(std::string_view flag, const std::string& path);

}  // namespace oomlab::cli
