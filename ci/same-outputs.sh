#!/usr/bin/env bash
# ci/same-outputs.sh OLD NEW: whether two oomlab binaries answer alike, for a reshaping that must
# not change behaviour. Runs each command that writes JSON (run, whatif, frontier) on every trace
# and snapshot under tests/data and on every scenario (sim, small budgets), with both binaries,
# and compares the JSON with times, durations, git and paths left out. Prints one line per case
# that differs (and its first differing lines); exit 1 when any does.
set -uo pipefail
old="$(realpath "${1:?usage: ci/same-outputs.sh OLD_BINARY NEW_BINARY}")"
new="$(realpath "${2:?usage: ci/same-outputs.sh OLD_BINARY NEW_BINARY}")"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root" || exit 2

# The JSON without what changes from run to run: times, durations, commits, paths of outputs.
normalize() {
  python3 -c '
import json, re, sys
VOLATILE = re.compile(r"(^|_)(ms|s|seconds|time|utc|started|ended|duration.*|git.*|host.*|pid|path|out|folder|version|elapsed.*|rss.*)$")
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if not VOLATILE.search(k)}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
text = sys.stdin.read()
try:
    print(json.dumps(clean(json.loads(text)), indent=1, sort_keys=True))
except ValueError:
    print(text)
'
}

cases=()
traces=$(git ls-files 'tests/data/*.pickle' 'tests/data/*.json' 'tests/data/*.csv' |
  grep -v -e '/compare/' -e '/report/' -e 'frontiers.json' -e 'summary.json' -e 'matrix.json' |
  grep -e pickle -e snapshot -e rmm_ -e oomlab_ -e '/exec/' | sort)
# Each case runs in $work (its run folders land there, not in the checkout), so a trace is named
# by its absolute path: a relative one made every trace case two equal "cannot open" errors.
for t in $traces; do
  t="$root/$t"
  cases+=("run replay --trace $t --no-out --json -")
  case "$t" in
    *.pickle | *snapshot*.json)
      cases+=("whatif --trace $t --budget 8GiB --json -")
      cases+=("frontier replay --trace $t -a torch --json -") ;;
  esac
done
for s in $("$new" list 2>/dev/null | awk '/^Scenarios/ {on = 1; next} /^[A-Z]/ {on = 0}
    on && /^  [a-z]/ {print $1}' | grep -v '^replay$'); do
  cases+=("run $s -a sim --budget 2GiB --no-out --json -")
done

differ=0
i=0
for c in "${cases[@]}"; do
  i=$((i + 1))
  for side in old new; do
    binary="$old"
    [[ $side == new ]] && binary="$new"
    # shellcheck disable=SC2086
    (cd "$work" && timeout 300 "$binary" $c >"$work/raw" 2>/dev/null)
    rc=$?
    # The binary's own path (the recorded command line) is not an answer.
    { sed "s#$binary#oomlab#g" "$work/raw" | normalize; echo "exit $rc"; } >"$work/$side.$i"
  done
  if ! cmp -s "$work/old.$i" "$work/new.$i"; then
    differ=$((differ + 1))
    echo "differs: oomlab $c"
    diff "$work/old.$i" "$work/new.$i" | head -8 | sed 's/^/    /'
  fi
done
echo "same-outputs: ${#cases[@]} cases, $differ differ"
[[ $differ -eq 0 ]]
