#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy over every C++ source file of harness/, scenarios/,
# reports/ and frameworks/ (their headers through HeaderFilterRegex), on both cores: any warning fails.
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
# A unity build (CMAKE_UNITY_BUILD) lists its batches (Unity/unity_N_cxx.cxx) there, not the files,
# and clang-tidy checks a batch as the build compiles it: its files, included by the batch, are
# matched by HeaderFilterRegex, so their warnings are reported as from the file alone, and the
# headers they share are parsed once a batch, not once a file (a quarter of the CPU time of one
# file at a time, bench/NOTES.md).
# Each batch is checked from a copy in $build/tidy/ whose includes of the batch's .cpp files carry
# NOLINTNEXTLINE(bugprone-suspicious-include): that check still sees every include of the sources.
# Two checks look at the main file only (misc-unused-using-decls, misc-unused-alias-decls: a
# batch's own file is the copy): they run again, alone, on each file of a batch on its own, with
# the batch's command ($build/tidy/compile_commands.json), where the file has what they look at
# (a using-declaration or a namespace alias); a file without either has nothing for them to find.
mkdir -p "$build/tidy"
mapfile -t jobs < <(python3 - "$build/compile_commands.json" "$build/tidy" <<'PY'
import json, os, re, sys
root = os.getcwd()
tidy = sys.argv[2]
def ours(path):
    path = os.path.relpath(path, root)
    return path.endswith(".cpp") and path.split("/")[0] in ("harness", "scenarios", "reports", "frameworks")
batches, singles, alone = [], [], []
for entry in json.load(open(sys.argv[1])):
    source = os.path.join(entry["directory"], entry["file"])
    if "/Unity/unity_" not in source:
        if ours(source):
            singles.append(entry)
        continue
    text = open(source).read()
    included = re.findall(r'^#include "(.+)"$', text, re.MULTILINE)
    if not included or not all(ours(f) for f in included):
        continue
    name = os.path.relpath(source, entry["directory"]).replace("/", "_")
    copy = os.path.join(tidy, name)
    open(copy, "w").write(re.sub(r'^(#include ".+\.cpp")$',
                                 r'// NOLINTNEXTLINE(bugprone-suspicious-include)\n\1',
                                 text, flags=re.MULTILINE))
    batches.append(dict(entry, file=copy, command=entry["command"].replace(source, copy)))
    for f in included:
        alone.append(dict(entry, file=f, command=entry["command"].replace(source, f)))
json.dump(batches + singles + alone, open(os.path.join(tidy, "compile_commands.json"), "w"), indent=1)
# A using-declaration (using a::b; using ::b; using typename A::b;) or a namespace alias.
main_file_only = re.compile(r'\busing\s+(typename\s+)?[\w:]*::\s*\w+\s*[;,]|\bnamespace\s+\w+\s*=')
files = sorted({e["file"] for e in batches} | {os.path.join(e["directory"], e["file"]) for e in singles})
light = sorted({e["file"] for e in alone if main_file_only.search(open(e["file"]).read())})
print("\n".join(["full " + f for f in files] + ["main " + f for f in light]))
print("files %d" % len({os.path.join(e["directory"], e["file"]) for e in singles + alone}))
PY
)
full=() main=() files=0
for job in "${jobs[@]}"; do
  case "$job" in
    full\ *) full+=("${job#full }") ;;
    main\ *) main+=("${job#main }") ;;
    files\ *) files="${job#files }" ;;
  esac
done
echo "ci/tidy.sh: $files files in ${#full[@]} batches and files, then the main-file checks on" \
  "${#main[@]} of them, $(nproc) at a time"
log="$build/tidy.log"
status=0
printf '%s\n' "${full[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$build/tidy" --quiet >"$log" 2>&1 || status=$?
printf '%s\n' "${main[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$build/tidy" --quiet \
    --checks='-*,misc-unused-using-decls,misc-unused-alias-decls' >>"$log" 2>&1 || status=$?
grep -E "(warning|error):" "$log" | sort -u || true
if ((status != 0)); then
  echo "ci/tidy.sh: clang-tidy found the above (whole log: $log)" >&2
  exit 1
fi
echo "ci/tidy.sh: clean"
