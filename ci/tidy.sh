#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over every C++ source file of harness/, scenarios/
# and reports/ (their headers through HeaderFilterRegex), on both cores: any warning fails.
#   ci/tidy.sh [BUILD_DIR=build]     (a configured and built tree: its compile_commands.json and
#                                     generated headers)
# The stubs of a build without CUDA (no_*.cpp) are checked when BUILD_DIR has them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[[ -f "$build/compile_commands.json" ]] || {
  echo "ci/tidy.sh: $build/compile_commands.json not found (configure and build first)" >&2
  exit 2
}
command -v clang-tidy >/dev/null || { echo "ci/tidy.sh: clang-tidy not found" >&2; exit 2; }
cd "$root"
# The files the build compiles (a file of the other CUDA setting is not in compile_commands.json).
# A unity build (CMAKE_UNITY_BUILD) lists its batches (Unity/unity_N_cxx.cxx) there, not the files:
# each batch's files get its command back, one file each, in $build/tidy/compile_commands.json, so
# that clang-tidy still checks every file on its own, as the build without batches compiles it.
mkdir -p "$build/tidy"
mapfile -t files < <(python3 - "$build/compile_commands.json" "$build/tidy/compile_commands.json" <<'PY'
import json, os, re, sys
root = os.getcwd()
entries = []
for entry in json.load(open(sys.argv[1])):
    source = os.path.join(entry["directory"], entry["file"])
    if "/Unity/unity_" not in source:
        entries.append(entry)
        continue
    for included in re.findall(r'^#include "(.+)"$', open(source).read(), re.MULTILINE):
        entries.append(dict(entry, file=included, command=entry["command"].replace(source, included)))
json.dump(entries, open(sys.argv[2], "w"), indent=1)
seen = set()
for entry in entries:
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if path.endswith(".cpp") and path.split("/")[0] in ("harness", "scenarios", "reports"):
        seen.add(path)
print("\n".join(sorted(seen)))
PY
)
echo "ci/tidy.sh: ${#files[@]} files, $(nproc) at a time"
log="$build/tidy.log"
status=0
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$build/tidy" --quiet >"$log" 2>&1 || status=$?
grep -E "(warning|error):" "$log" | sort -u || true
if ((status != 0)); then
  echo "ci/tidy.sh: clang-tidy found the above (whole log: $log)" >&2
  exit 1
fi
echo "ci/tidy.sh: clean"
