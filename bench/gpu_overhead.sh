#!/usr/bin/env bash
# The harness's own cost on the GPU (issue 26), in one call of at most 8 minutes on the GPU machine:
#
#   bench/gpu_overhead.sh BENCH_DIR OUT [--budget SECONDS] [--only REGEX]
#                                   (BENCH_DIR: .gpu/bench, staged by ci/stage-gpu.sh; oomlab one up;
#                                    --only: the steps whose names match, e.g. 'fill_no_csv|replay')
#
# Runs, pinned to two CPUs (taskset; the filling thread and the events.csv writer each get one):
# the clock and first-touch costs (clock/*, first_touch/*); fill_vs_bare/async with events.csv
# and without; each fill_hypothesis/* (bench/NOTES.md: first touch of the event chunks, the clock
# read, the virtual call, events.csv's writer, the live-block table, the scenario's list, the
# layers); BM_ReplayVsBareLoopOnAsync on the whole device and under 8 GiB; the replay's split
# inside and outside the driver calls (BM_ReplayInCallSplitOnAsync); fill_vs_bare/async
# without events.csv unpinned (the spread with and without pinning); last the RMM log against
# pandas' read_csv (bench/peers/rmm_csv_peer.py, 2M rows, medians of 5; not pinned, as a user
# runs it). Each step writes Google Benchmark JSON to OUT/<step>.json; a step that would not end
# before the budget (default 450 s) is skipped and said so. Then bench/summary.py OUT
# --gpu-overhead prints each hypothesis's ratios and cv and the fill / replay / peer figures
# against their targets, and writes OUT/gpu_overhead.json. Without a CUDA device it says "needs
# a CUDA device" and exits 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
budget=450
only=""
args=()
while (($#)); do
  case "$1" in
    --budget) budget="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "bench/gpu_overhead.sh: unknown option $1" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ((${#args[@]} != 2)); then
  echo "usage: bench/gpu_overhead.sh BENCH_DIR OUT [--budget SECONDS] [--only REGEX]" >&2
  exit 2
fi
dir="${args[0]}"
out="${args[1]}"
for p in overhead replay; do
  [[ -x "$dir/oomlab_${p}_bench" ]] || { echo "bench/gpu_overhead.sh: $dir/oomlab_${p}_bench not found (ci/stage-gpu.sh stages it)" >&2; exit 2; }
done
[[ -x "$dir/../oomlab" ]] || { echo "bench/gpu_overhead.sh: $dir/../oomlab not found" >&2; exit 2; }
if ! "$dir/oomlab_overhead_bench" --benchmark_list_tests | grep -q '^fill_hypothesis/'; then
  echo "bench/gpu_overhead.sh: $dir was built without CUDA: needs a CUDA device and a CUDA build (ci/stage-gpu.sh)" >&2
  exit 1
fi
mkdir -p "$out"
start=$SECONDS

# CPUs in a list such as "0-7,12,14-15", one a line.
expand() {
  local part
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ "$part" == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}

# Two CPUs for the benchmarks: the last one allowed, and the highest other that is not its
# hyperthread twin (the filling thread and the events.csv writer each get a core of their own).
pin=()
mapfile -t allowed < <(expand "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)")
if command -v taskset >/dev/null && ((${#allowed[@]} >= 4)); then
  last="${allowed[-1]}"
  mapfile -t twins < <(expand "$(cat "/sys/devices/system/cpu/cpu$last/topology/thread_siblings_list" 2>/dev/null || echo "$last")")
  for ((i = ${#allowed[@]} - 2; i >= 0; i--)); do
    [[ " ${twins[*]} " == *" ${allowed[i]} "* ]] && continue
    pin=(taskset -c "$last,${allowed[i]}")
    break
  done
fi
echo "bench/gpu_overhead.sh: pinned to ${pin[*]:-nothing (taskset or CPUs missing)}; budget ${budget} s" >&2

# step NAME ESTIMATE_S PINNED|UNPINNED PROGRAM FILTER REPETITIONS [ARGS...]
step() {
  local name="$1" estimate="$2" pinning="$3" program="$4" filter="$5" reps="$6"
  shift 6
  if [[ -n "$only" && ! "$name" =~ ^($only)$ ]]; then return 0; fi
  local left=$((budget - (SECONDS - start)))
  if ((left < estimate)); then
    echo "  $name: skipped (${left} s left, needs ~${estimate} s)" >&2
    return 0
  fi
  local prefix=()
  [[ "$pinning" == pinned ]] && prefix=("${pin[@]}")
  echo "  $name: oomlab_${program}_bench --benchmark_filter='$filter' x$reps (~${estimate} s)" >&2
  local rc=0
  timeout "$left" "${prefix[@]}" "$dir/oomlab_${program}_bench" --benchmark_filter="$filter" \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@" >"$out/$name.txt" 2>&1 || rc=$?
  if grep -q 'needs a CUDA device' "$out/$name.txt"; then
    echo "bench/gpu_overhead.sh: needs a CUDA device (none here: $name skipped every GPU benchmark)" >&2
    exit 1
  fi
  if grep -q 'Failed to match any benchmarks' "$out/$name.txt"; then
    echo "bench/gpu_overhead.sh: $name: no benchmark matches '$filter' in oomlab_${program}_bench" >&2
    exit 1
  fi
  if ((rc != 0)); then
    echo "  $name: exited $rc (see $out/$name.txt)" >&2
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/$name.json" 2>/dev/null ||
      rm -f "$out/$name.json"  # cut off mid-way: no figures rather than half a file
  fi
}

step micro 10 pinned overhead '^(clock/|first_touch)' 5 --benchmark_min_time=0.1
step fill 50 pinned overhead '^fill_vs_bare/async/iterations' 5
step fill_no_csv 50 pinned overhead '^fill_vs_bare/async/no_events_csv/' 5
for h in a_chunks_first_touch b_clock c_virtual_call d_events_csv e_live_table e_block_list layers g_in_call h_cache_traffic; do
  step "hypothesis_$h" 25 pinned overhead "^fill_hypothesis/$h/" 5
done
step replay 90 pinned replay '^BM_ReplayVsBareLoopOnAsync' 3
step hypothesis_i_replay_split 150 pinned replay '^BM_ReplayInCallSplitOnAsync' 3
# ~45 s, and the peer's ~50 s kept for it: the peer is the later step, but not the lesser one.
step fill_no_csv_unpinned 95 unpinned overhead '^fill_vs_bare/async/no_events_csv/' 5
left=$((budget - (SECONDS - start)))
if [[ -n "$only" && ! peer =~ ^($only)$ ]]; then
  :
elif ((left >= 45)); then
  echo "  peer: bench/peers/rmm_csv_peer.py --rows 2000000 --repeat 5" >&2
  timeout "$left" python3 "$root/bench/peers/rmm_csv_peer.py" --bench "$dir/oomlab_replay_bench" \
    --oomlab "$dir/../oomlab" --rows 2000000 --repeat 5 --json "$out/rmm_csv_peer.json" ||
    echo "  peer: failed or ran out of time" >&2
else
  echo "  peer: skipped (${left} s left, needs ~45 s)" >&2
fi
echo "bench/gpu_overhead.sh: $((SECONDS - start)) s" >&2
python3 "$root/bench/summary.py" "$out" --gpu-overhead
