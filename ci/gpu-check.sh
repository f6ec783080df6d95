#!/usr/bin/env bash
# The GPU check, run on a machine with a CUDA device. It builds nothing: point it at a folder
# holding the `oomlab` and `oomlab_tests` binaries (ci/stage-gpu.sh makes one, or a build tree).
#
#   ci/gpu-check.sh [BIN_DIR=.gpu] [--budget SIZE=2GiB] [--quick]
#   ci/gpu-check.sh [BIN_DIR=.gpu] --bench     the benchmark suite instead (bench/run.sh on
#                                              BIN_DIR/bench), ending with its summary table
#
# 1. `oomlab info`;
# 2. the whole test suite, one process per test, which must pass with zero tests skipped;
# 3. compute-sanitizer: the kernel and integrity tests under memcheck --leak-check full and
#    racecheck (zero errors, zero leaks), and every scenario x allocator run under memcheck
#    --leak-check full (zero access errors, zero bytes leaked; the provoked OOMs are not errors);
# 4. a smoke table: every scenario x {cuda, async, managed} at the budget, one line per run
#    (outcome, cause, the scenario's result, integrity, device free before and after), with
#    checks: every run ends in OOM with a cause and no corrupted data, the device gets all its
#    memory back (2 MiB),
#    and managed memory never goes past the budget. cudaMalloc and pool runs must leave free
#    memory as it was, both ways; after a managed run it may be higher (the driver gives back
#    memory of its own), never lower;
# 5. the PyTorch sample snapshot replayed at level=segment on cuda, async and managed at the
#    original run's budget: where each fails, next to where PyTorch did;
# 6. a soak: 1,000 OOM-and-recover cycles in one process on async and on cuda (run --repeat),
#    which must give back the process's memory, the device's and the allocator's every time
#    (sections soak-async and soak-cuda, one call of the GPU machine each);
# 7. torch: the captured PyTorch snapshots replayed through the `torch` allocator on the sim and
#    on the device (upstream=cuda) at the budgets their jobs ran under, and each job's frontier on
#    both next to PyTorch's measured one (ci/torch-check.py).
# Artifacts (test log, summaries) go to $OUT if set, else ./gpu-check-out. Exit 1 on any failure.
# GPU_CHECK_SECTIONS="tests sanitizer smoke replay soak-async soak-cuda torch" (the default)
# picks sections, each timed; `--quick` (after BIN_DIR, or after --budget SIZE) runs all but the
# soaks.
set -uo pipefail

bin="${1:-.gpu}"
budget="2GiB"
if [[ "${2:-}" == "--budget" && -n "${3:-}" ]]; then budget="$3"; fi
all_sections="tests sanitizer smoke replay soak-async soak-cuda torch"
if [[ " $* " == *" --quick "* ]]; then  # everything but the soaks
  all_sections="tests sanitizer smoke replay torch"
fi
out="${OUT:-./gpu-check-out}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "${2:-}" == "--bench" ]]; then
  export OOMLAB_TEST_DATA="$root/tests/data"
  "$bin/oomlab" info || { echo "gpu-check: oomlab info found no usable device" >&2; exit 1; }
  exec "$root/bench/run.sh" "$bin/bench" --out "$out/bench"
fi
export OOMLAB_TEST_DATA="$root/tests/data"  # the tests' traces, in this copy of the tree
mkdir -p "$out"
oomlab="$bin/oomlab"
tests="$bin/oomlab_tests"
[[ -x "$tests" ]] || tests="$bin/tests/oomlab_tests"
# The allocator contract over every registered backend is a binary of its own (it loads a plugin).
contract="$bin/oomlab_contract_tests"
[[ -x "$contract" ]] || contract="$bin/tests/contract/oomlab_contract_tests"
for f in "$oomlab" "$tests" "$contract"; do
  [[ -x "$f" ]] || { echo "gpu-check: $f not found (run ci/stage-gpu.sh first)" >&2; exit 2; }
done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# GPU_CHECK_SECTIONS picks sections (default: all of them, in this order).
want() { [[ " ${GPU_CHECK_SECTIONS:-$all_sections} " == *" $1 "* ]]; }
# Each section's time, printed as it ends and again at the end (a section must fit one call of
# the GPU machine: 10 minutes).
section_times=()
begin_section() {
  section_name="$1"
  section_start=$SECONDS
}
end_section() {
  local took=$((SECONDS - section_start))
  section_times+=("$(printf '%-12s %dm%02ds' "$section_name" $((took / 60)) $((took % 60)))")
  echo "   ($section_name: $((took / 60))m$((took % 60))s)"
}

echo "== oomlab info"
"$oomlab" info || fail "oomlab info found no usable device"

if want tests; then
begin_section tests
echo "== test suite (one process per test, as ctest runs them: a test's before/after device"
echo "   memory figures must not see what the driver releases late from an earlier test)"
: >"$out/tests.log"
passed=0; failed=0; skipped=0; browser_skipped=0; suite=""
for binary in "$tests" "$contract"; do
while IFS= read -r line; do
  if [[ "$line" != " "* ]]; then suite="${line%%#*}"; suite="${suite%% *}"; continue; fi
  name="${line#  }"; name="${name%%#*}"; name="${name%% *}"
  result=$("$binary" --gtest_color=no --gtest_filter="$suite$name" 2>&1)
  echo "$result" >>"$out/tests.log"
  if [[ "$suite" == ReportBrowser* ]] && grep -q 'not found on PATH' <<<"$result"; then
    # The report's browser test needs Chromium, not a GPU; GPU machines have none and no network
    # to install it. It runs (and must pass) in .ci/run, which installs Chromium.
    browser_skipped=$((browser_skipped + 1)); echo "  not here: $suite$name (no Chromium; runs in .ci/run)"
  elif grep -qE '^\[  SKIPPED \] [A-Za-z]' <<<"$result"; then
    skipped=$((skipped + 1)); echo "  SKIPPED $suite$name"
  elif grep -qE '^\[  PASSED  \] 1 test' <<<"$result"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "  FAILED  $suite$name"
  fi
done < <("$binary" --gtest_list_tests)
done
echo "  passed: $passed  failed: $failed  skipped: $skipped  (browser tests left to .ci/run: $browser_skipped)"
[[ $failed -eq 0 ]] || fail "$failed tests failed (log: $out/tests.log)"
[[ $skipped -eq 0 ]] || fail "$skipped tests skipped on the GPU machine"
[[ $passed -gt 0 ]] || fail "no test ran"

end_section
fi

# compute-sanitizer allocates device memory of its own as it tracks launches, so the tests that
# measure device free memory to the byte cannot hold under it (they run, and must pass, above);
# and a run that fills its budget leaves the sanitizer no room to track the kernels launched then
# ("Internal Sanitizer Error ... didn't track the launch": counted below as untracked launches).
# So: the kernel and integrity tests under memcheck, where every error and leak counts; then every
# scenario x allocator through the oomlab binary under memcheck, where the OOMs the runs provoke
# are not reported as API errors and what counts is memory access errors and leaks.
if want sanitizer; then
begin_section sanitizer
if command -v compute-sanitizer >/dev/null; then
  kernel_tests='Kernels.*:Integrity.*:-Kernels.TouchLandsManagedMemoryOnTheDevice'
  echo "== kernel tests under compute-sanitizer --tool memcheck --leak-check full ($kernel_tests)"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 "$tests" \
    --gtest_filter="$kernel_tests" --gtest_color=no >"$out/memcheck.log" 2>&1
  memcheck_rc=$?
  grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED|SKIPPED) ' "$out/memcheck.log" | sed 's/^/  /'
  [[ $memcheck_rc -eq 0 ]] || fail "compute-sanitizer memcheck exit code $memcheck_rc (log: $out/memcheck.log)"
  echo "== kernel tests under compute-sanitizer --tool racecheck"
  compute-sanitizer --tool racecheck --error-exitcode 99 "$tests" --gtest_filter='Kernels.*' \
    --gtest_color=no >"$out/racecheck.log" 2>&1
  racecheck_rc=$?
  grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$out/racecheck.log" | sed 's/^/  /'
  [[ $racecheck_rc -eq 0 ]] || fail "compute-sanitizer racecheck exit code $racecheck_rc (log: $out/racecheck.log)"
  echo "== every scenario x {cuda, async, managed} at 512 MiB under memcheck --leak-check full"
  printf '  %-16s %-8s %-8s %-14s %-14s %s\n' scenario allocator outcome leaked access-errors untracked-launches
  for scenario in fragmentation growing-batch mixed-precision leak replay; do
    extra=()
    [[ $scenario == replay ]] && extra=(--trace "$OOMLAB_TEST_DATA/pytorch_gpt_fp32_snapshot.pickle" -p level=segment)
    for allocator in cuda async managed; do
      log="$out/memcheck-$scenario-$allocator.log"
      compute-sanitizer --tool memcheck --leak-check full --report-api-errors no "$oomlab" run "$scenario" \
        --allocator="$allocator" --budget=512MiB "${extra[@]}" --quiet --force --out "$out/memcheck-run-$scenario-$allocator" \
        --json "$out/memcheck-$scenario-$allocator.json" >"$log" 2>&1
      leaked=$(sed -n 's/.*LEAK SUMMARY: \([0-9]*\) bytes leaked.*/\1/p' "$log" | tail -n 1)
      access=$(grep -cE 'Invalid (__global__|__shared__|__local__)|is out of bounds|Misaligned|Out-of-range' "$log")
      untracked=$(grep -c "didn't track the launch" "$log")
      outcome=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['outcome'])" \
        "$out/memcheck-$scenario-$allocator.json" 2>/dev/null || echo none)
      verdict=ok
      if [[ -z "$leaked" || "$leaked" != 0 || "$access" != 0 || "$outcome" != oom ]]; then
        verdict=FAIL; failures=$((failures + 1))
      fi
      printf '  %-16s %-8s %-8s %-14s %-14s %-18s %s\n' "$scenario" "$allocator" "$outcome" \
        "${leaked:-none} B" "$access" "$untracked" "$verdict"
    done
  done
else
  fail "compute-sanitizer is not on PATH"
fi

end_section
fi

if want smoke; then
begin_section smoke
echo "== smoke: every scenario x {cuda, async, managed} at $budget"
printf '%-16s %-8s %-8s %-14s %-12s %-26s %-11s %-16s %-16s %-11s %s\n' scenario allocator outcome cause source \
  result integrity device_free_before device_free_after after-before check
for scenario in fragmentation growing-batch mixed-precision leak; do
for allocator in cuda async managed; do
  summary="$out/summary-$scenario-$allocator.json"
  "$oomlab" run "$scenario" --allocator="$allocator" --budget="$budget" --quiet \
    --force --out "$out/run-$scenario-$allocator" --json "$summary" 2>"$out/run-$scenario-$allocator.err"
  rc=$?
  line=$(python3 - "$summary" "$rc" "$scenario" "$allocator" <<'PY'
import json, sys
path, rc, scenario, allocator = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    s = json.load(open(path))
except Exception as e:
    print(f"{scenario:<16} {allocator:<8} no summary ({e}); exit {rc}\tFAIL"); sys.exit()
size = lambda b: "-" if b is None else f"{b / 2**30:.3f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"
oom, clean, m = s.get("oom") or {}, s.get("cleanup") or {}, s.get("metrics", {})
result = {"fragmentation": lambda: f"live at OOM {size(oom.get('live_bytes'))}",
          "growing-batch": lambda: f"max batch {m.get('max_batch')} (model {m.get('analytic_max_batch')})",
          "mixed-precision": lambda: "max batch " + "/".join(str(m.get('max_batch_' + p)) for p in ("fp32", "fp16", "bf16", "fp8")),
          "leak": lambda: f"{m.get('leak_bytes_per_step', 0) / 2**20:.2f} MiB/step, OOM {m.get('actual_oom_step')} (fc {m.get('predicted_oom_step')})"}[scenario]()
problems = []
if rc != 0: problems.append(f"exit {rc}")
if s["outcome"] != "oom": problems.append("no OOM")
if not oom.get("cause"): problems.append("no cause")
if s["integrity"]["corrupted"] != 0: problems.append("corrupted data")
before, after = clean.get("device_free_before"), clean.get("device_free_after")
if before is None or after is None: problems.append("no cleanup figures")
elif before - after > 2 * 2**20 and not clean.get("not_counted"): problems.append("memory left behind")
elif allocator != "managed" and after - before > 2 * 2**20: problems.append("device free memory changed")
if allocator == "managed" and s["peak"]["reserved_bytes"] > s["budget_bytes"]: problems.append("managed past budget")
integrity = f"{s['integrity']['checked']}/{s['integrity']['corrupted']}"
print(f"{scenario:<16} {allocator:<8} {s['outcome']:<8} {oom.get('cause','-'):<14} {oom.get('source','-'):<12} "
      f"{result:<26} {integrity:<11} {size(before):<16} {size(after):<16} "
      f"{'-' if before is None or after is None else f'{(after - before) / 2**20:+.1f} MiB':<11} "
      f"{'ok' if not problems else 'FAIL: ' + ', '.join(problems)}")
PY
)
  echo "$line"
  [[ "$line" == *FAIL* ]] && failures=$((failures + 1))
done
done
echo "  (integrity: block checks / corrupted blocks; mixed-precision: fp32/fp16/bf16/fp8)"

end_section
fi

if want replay; then
begin_section replay
echo "== replay: the PyTorch sample at level=segment, budget 8,501,749,350 B (the original run's)"
echo "   PyTorch itself failed at device_traces[0][16794], a 1.00 GiB request"
snapshot="$OOMLAB_TEST_DATA/pytorch_gpt_fp32_snapshot.pickle"
for allocator in cuda async managed; do
  summary="$out/summary-replay-$allocator.json"
  "$oomlab" run replay --trace "$snapshot" -p level=segment --allocator="$allocator" --budget=8501749350 \
    --quiet --force --out "$out/run-replay-$allocator" --json "$summary" 2>"$out/run-replay-$allocator.err"
  rc=$?
  line=$(python3 - "$summary" "$rc" "$allocator" <<'PY'
import json, sys
path, rc, allocator = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    s = json.load(open(path))
except Exception as e:
    print(f"{allocator:<8} no summary ({e}); exit {rc}\tFAIL"); sys.exit()
m, oom, clean = s["metrics"], s.get("oom") or {}, s.get("cleanup") or {}
where = m.get("first_failure_index")
problems = []
if s["outcome"] not in ("oom", "completed"): problems.append(s["outcome"])
if s["integrity"]["corrupted"] != 0: problems.append("corrupted data")
before, after = clean.get("device_free_before"), clean.get("device_free_after")
if before is None or after is None or before - after > 2 * 2**20: problems.append("memory left behind")
print(f"{allocator:<8} {s['outcome']:<9} first failure at event {'-' if where is None else int(where):<7} "
      f"({'same place as PyTorch' if m.get('failed_at_same_place') == 1 else 'not where PyTorch failed'}) "
      f"request {(oom.get('request_bytes') or 0) / 2**30:.2f} GiB, cause {oom.get('cause', '-')}, "
      f"peak {m.get('peak_live_bytes', 0) / 2**30:.3f} GiB, events {int(m.get('events_replayed', 0))}/{int(m.get('trace_events', 0))}  "
      f"{'ok' if not problems else 'FAIL: ' + ', '.join(problems)}")
PY
)
  echo "  $line"
  [[ "$line" == *FAIL* ]] && failures=$((failures + 1))
done

end_section
fi

# One section an allocator, each its own call of the GPU machine (at most 10 minutes): "soak"
# names both.
for allocator in async cuda; do
if want "soak-$allocator" || want soak; then
begin_section "soak-$allocator"
echo "== soak on $allocator: 1,000 OOM cycles in one process, fragmentation at 256 MiB in 1 MiB blocks"
"$oomlab" run fragmentation --allocator="$allocator" --budget=256MiB -p block=1MiB --verify=off \
  --no-probe --repeat="${GPU_CHECK_SOAK_CYCLES:-1000}" --force --out "$out/soak-$allocator" \
  >"$out/soak-$allocator.txt" 2>&1
rc=$?
sed 's/^/  /' "$out/soak-$allocator.txt"
[[ $rc -eq 0 ]] || fail "soak on $allocator exited $rc"
end_section
fi
done

if want torch; then
begin_section torch
echo "== torch: PyTorch's allocator modelled, on the sim and on the device"
python3 "$root/ci/torch-check.py" "$bin" "$out/torch" || fail "torch-check"

end_section
fi

echo "== section times"
for line in "${section_times[@]}"; do echo "   $line"; done
if [[ $failures -eq 0 ]]; then
  echo "gpu-check: all checks passed"
  exit 0
fi
echo "gpu-check: $failures check(s) failed (artifacts in $out)"
exit 1
