#!/usr/bin/env bash
# The GPU check, run on a machine with a CUDA device. It builds nothing: point it at a folder
# holding the `oomlab` and `oomlab_tests` binaries (ci/stage-gpu.sh makes one, or a build tree).
#
#   ci/gpu-check.sh [BIN_DIR=.gpu] [--budget SIZE=2GiB]
#
# 1. `oomlab info`;
# 2. the whole test suite, one process per test, which must pass with zero tests skipped;
# 3. a smoke table: fragmentation x {cuda, async, managed} at the budget, one line per run
#    (outcome, cause, live at OOM, largest free block, device free before and after), with
#    checks: every run ends in OOM with a cause, the device gets all its memory back (2 MiB),
#    and managed memory never goes past the budget. cudaMalloc and pool runs must leave free
#    memory as it was, both ways; after a managed run it may be higher (the driver gives back
#    memory of its own), never lower.
# Artifacts (test log, summaries) go to $OUT if set, else ./gpu-check-out. Exit 1 on any failure.
set -uo pipefail

bin="${1:-.gpu}"
budget="2GiB"
if [[ "${2:-}" == "--budget" && -n "${3:-}" ]]; then budget="$3"; fi
out="${OUT:-./gpu-check-out}"
mkdir -p "$out"
oomlab="$bin/oomlab"
tests="$bin/oomlab_tests"
[[ -x "$tests" ]] || tests="$bin/tests/oomlab_tests"
for f in "$oomlab" "$tests"; do
  [[ -x "$f" ]] || { echo "gpu-check: $f not found (run ci/stage-gpu.sh first)" >&2; exit 2; }
done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

echo "== oomlab info"
"$oomlab" info || fail "oomlab info found no usable device"

echo "== test suite (one process per test, as ctest runs them: a test's before/after device"
echo "   memory figures must not see what the driver releases late from an earlier test)"
: >"$out/tests.log"
passed=0; failed=0; skipped=0; suite=""
while IFS= read -r line; do
  if [[ "$line" != " "* ]]; then suite="${line%%#*}"; suite="${suite%% *}"; continue; fi
  name="${line#  }"; name="${name%%#*}"; name="${name%% *}"
  result=$("$tests" --gtest_color=no --gtest_filter="$suite$name" 2>&1)
  echo "$result" >>"$out/tests.log"
  if grep -qE '^\[  SKIPPED \] [A-Za-z]' <<<"$result"; then
    skipped=$((skipped + 1)); echo "  SKIPPED $suite$name"
  elif grep -qE '^\[  PASSED  \] 1 test' <<<"$result"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "  FAILED  $suite$name"
  fi
done < <("$tests" --gtest_list_tests)
echo "  passed: $passed  failed: $failed  skipped: $skipped"
[[ $failed -eq 0 ]] || fail "$failed tests failed (log: $out/tests.log)"
[[ $skipped -eq 0 ]] || fail "$skipped tests skipped on the GPU machine"
[[ $passed -gt 0 ]] || fail "no test ran"

echo "== smoke: fragmentation at $budget"
printf '%-8s %-8s %-18s %-12s %-14s %-14s %-16s %-16s %-11s %s\n' allocator outcome cause source \
  live_at_oom largest_free device_free_before device_free_after after-before check
for allocator in cuda async managed; do
  summary="$out/summary-$allocator.json"
  "$oomlab" run fragmentation --allocator="$allocator" --budget="$budget" --quiet \
    --out "$out/run-$allocator" --json "$summary" 2>"$out/run-$allocator.err"
  rc=$?
  line=$(python3 - "$summary" "$rc" "$allocator" <<'PY'
import json, sys
path, rc, allocator = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    s = json.load(open(path))
except Exception as e:
    print(f"{allocator:<8} no summary ({e}); exit {rc}\tFAIL"); sys.exit()
gib = lambda b: "-" if b is None else f"{b / 2**30:.3f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"
oom, clean = s.get("oom") or {}, s.get("cleanup") or {}
problems = []
if rc != 0: problems.append(f"exit {rc}")
if s["outcome"] != "oom": problems.append("no OOM")
if not oom.get("cause"): problems.append("no cause")
before, after = clean.get("device_free_before"), clean.get("device_free_after")
# Left behind: less free after than before. cudaMalloc and pools must match to 2 MiB both ways;
# the managed-memory driver may give back memory of its own during a run (more free after).
if before is None or after is None or before - after > 2 * 2**20: problems.append("memory left behind")
elif allocator != "managed" and after - before > 2 * 2**20: problems.append("device free memory changed")
if allocator == "managed" and s["peak"]["reserved_bytes"] > s["budget_bytes"]: problems.append("managed past budget")
print(f"{allocator:<8} {s['outcome']:<8} {oom.get('cause','-'):<18} {oom.get('source','-'):<12} "
      f"{gib(oom.get('live_bytes')):<14} {gib(oom.get('largest_free_bytes')):<14} {gib(before):<16} "
      f"{gib(after):<16} {'-' if before is None or after is None else f'{(after - before) / 2**20:+.1f} MiB':<11} "
      f"{'ok' if not problems else 'FAIL: ' + ', '.join(problems)}")
PY
)
  echo "$line"
  [[ "$line" == *FAIL* ]] && failures=$((failures + 1))
done

if [[ $failures -eq 0 ]]; then
  echo "gpu-check: all checks passed"
  exit 0
fi
echo "gpu-check: $failures check(s) failed (artifacts in $out)"
exit 1
