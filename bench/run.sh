#!/usr/bin/env bash
# Runs oomlab's benchmark suite and prints the summary table (each figure against its target).
#
#   bench/run.sh [BENCH_DIR=build/bench] [--out DIR] [--smoke] [--no-peers]
#
# BENCH_DIR holds the oomlab_*_bench programs (a build's bench/ folder, or a staged .gpu/bench),
# with the oomlab binary one folder up. Each program writes Google Benchmark JSON to
# DIR/<program>.json (default ./bench-out); figures are medians over repetitions. Then the RMM
# log against pandas' read_csv (bench/peers/rmm_csv_peer.py, DIR/rmm_csv_peer.json; it says it
# skipped where pandas is missing; --no-peers leaves it out). --smoke runs every benchmark
# briefly and the peer on a small log (CI: does it build and run) and prints no table. Without a
# GPU the GPU benchmarks report "needs a CUDA device".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/build/bench"
out="./bench-out"
smoke=0
peers=1
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --no-peers) peers=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "bench/run.sh: unknown option $1" >&2; exit 2 ;;
    *) dir="$1"; shift ;;
  esac
done
programs=(overhead sim allocator replay memory startup fleet)
for p in "${programs[@]}"; do
  [[ -x "$dir/oomlab_${p}_bench" ]] || { echo "bench/run.sh: $dir/oomlab_${p}_bench not found" >&2; exit 2; }
done
mkdir -p "$out"

if ((smoke)); then
  for p in "${programs[@]}"; do
    "$dir/oomlab_${p}_bench" --benchmark_min_time=0.01 --benchmark_filter='-BM_SeriesTable/64|BM_SeriesTable20k' >"$out/$p.txt" 2>&1 ||
      { cat "$out/$p.txt"; echo "bench/run.sh: oomlab_${p}_bench failed" >&2; exit 1; }
    echo "  oomlab_${p}_bench: ok"
  done
  ((peers)) || exit 0
  python3 "$root/bench/peers/rmm_csv_peer.py" --bench "$dir/oomlab_replay_bench" --oomlab "$dir/../oomlab" \
    --rows 20000 --repeat 1 --json "$out/rmm_csv_peer.json" >"$out/rmm_csv_peer.txt" 2>&1 ||
    { cat "$out/rmm_csv_peer.txt"; echo "bench/run.sh: peers/rmm_csv_peer.py failed" >&2; exit 1; }
  echo "  peers/rmm_csv_peer.py: $(grep -o 'skipped: .*' "$out/rmm_csv_peer.txt" || echo ok)"
  exit 0
fi

# Repetitions give the medians; the long single-shot benchmarks (memory: 100M events) run once.
run() {
  local p="$1"; shift
  echo "bench: oomlab_${p}_bench $*" >&2
  "$dir/oomlab_${p}_bench" --benchmark_out="$out/$p.json" --benchmark_out_format=json \
    --benchmark_counters_tabular=true "$@" >"$out/$p.txt"
}
# fill_hypothesis/* are bench/gpu_overhead.sh's (minutes on a GPU): left out here.
run overhead --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.5 \
  --benchmark_filter=-^fill_hypothesis/
run sim --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run allocator --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2
run replay --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
run memory
run startup --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.5
run fleet --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
if ((peers)); then
  echo "bench: peers/rmm_csv_peer.py (a 2M-row RMM log: pandas read_csv, oomlab's load, oomlab run replay)" >&2
  python3 "$root/bench/peers/rmm_csv_peer.py" --bench "$dir/oomlab_replay_bench" --oomlab "$dir/../oomlab" \
    --json "$out/rmm_csv_peer.json" >"$out/rmm_csv_peer.txt"
fi
python3 "$root/bench/summary.py" "$out"
