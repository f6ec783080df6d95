#!/usr/bin/env bash
# The nightly job of a GPU runner: build, `oomlab info`, the matrix with fixed seeds and budget,
# the report, and `compare` against the baseline of this GPU model and driver family
# (ci/baselines/<gpu>-<driver major>.json). Exits with compare's code: 0 no regression,
# 1 a regression (earlier OOM, new OOM, crash, timeout), 2 bad usage or input, 5 a file could not
# be written, 6 baseline cells missing from the run or nothing matched (another budget, seed or
# scenario list than the baseline's). Everything it makes lands in one folder (the CI uploads it).
#
#   ci/nightly.sh [--out DIR] [--bin DIR] [--refresh-baseline]
#
#   --out DIR            artifacts (default nightly-out/)
#   --bin DIR            use the oomlab binary in DIR instead of building (ci/stage-gpu.sh's .gpu)
#   --refresh-baseline   write this run as the baseline for this GPU and driver family (the
#                        workflow's manual trigger); without a baseline the run becomes one
#
# Settings (environment): NIGHTLY_SCENARIOS=all NIGHTLY_ALLOCATORS=cuda,async,managed
# NIGHTLY_BUDGET=4GiB NIGHTLY_SEED=1 NIGHTLY_REPEAT=3 NIGHTLY_TIMEOUT=600 NIGHTLY_TOLERANCE=2%
# NIGHTLY_DEVICES=0 NIGHTLY_BASELINES=ci/baselines
# NIGHTLY_EXEC: the fleet's own programs as matrix cells, one NAME=COMMAND a line (oomlab exec,
# under the same budget), e.g. NIGHTLY_EXEC=$'train=python3 train.py --steps 50\nserve=./bench'
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="nightly-out"
bin=""
refresh=0
while (($# > 0)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --refresh-baseline) refresh=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "nightly: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
scenarios="${NIGHTLY_SCENARIOS:-all}"
allocators="${NIGHTLY_ALLOCATORS:-cuda,async,managed}"
budget="${NIGHTLY_BUDGET:-4GiB}"
seed="${NIGHTLY_SEED:-1}"
repeat="${NIGHTLY_REPEAT:-3}"
timeout="${NIGHTLY_TIMEOUT:-600}"
tolerance="${NIGHTLY_TOLERANCE:-2%}"
devices="${NIGHTLY_DEVICES:-0}"
baselines="${NIGHTLY_BASELINES:-$root/ci/baselines}"
execs=()
while IFS= read -r line; do
  [[ -n "$line" ]] && execs+=(--exec "$line")
done <<<"${NIGHTLY_EXEC:-}"

if [[ -z "$bin" ]]; then
  echo "== build"
  OOMLAB_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DOOMLAB_TESTS=OFF ${OOMLAB_CMAKE_ARGS:-}" "$root/ci/setup.sh"
  bin="$root/build"
fi
oomlab="$(cd "$bin" && pwd)/oomlab"
[[ -x "$oomlab" ]] || { echo "nightly: $oomlab not found" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"  # the trace below by a relative path: matrix keys must not depend on the checkout's place

echo "== oomlab info"
"$oomlab" info | tee "$out/info.txt" || echo "nightly: oomlab info found no usable device"
"$oomlab" info --json >"$out/info.json" || true

# The baseline's name: the GPU model and the driver's major version ("NVIDIA H100 80GB HBM3",
# 580.159.04 -> nvidia-h100-80gb-hbm3-580), so each runner label compares with its own kind.
gpu=$(sed -n 's/^ *"name": "\(.*\)",*$/\1/p' "$out/info.json" | head -n 1)
driver=$(sed -n 's/^ *"driver": "\([0-9]*\)\..*$/\1/p' "$out/info.json" | head -n 1)
gpu=$(tr 'A-Z' 'a-z' <<<"${gpu:-no-gpu}" | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
baseline="$baselines/$gpu-${driver:-none}.json"
echo "baseline: $baseline"

echo "== matrix ($scenarios x $allocators, budget $budget, seed $seed, $repeat runs a cell)"
matrix_code=0
"$oomlab" matrix --scenarios="$scenarios" --allocators="$allocators" --budget="$budget" --seed="$seed" \
  --repeat="$repeat" --timeout="$timeout" --devices="$devices" \
  --param "trace=tests/data/pytorch_gpt_fp32_snapshot.pickle" "${execs[@]}" \
  --out "$out/matrix" --junit "$out/matrix.junit.xml" | tee "$out/matrix.txt" || matrix_code=$?
if ((matrix_code == 2)); then echo "nightly: the matrix refused its arguments" >&2; exit 2; fi

echo "== report"
"$oomlab" report "$out/matrix"

if ((refresh == 1)) || [[ ! -f "$baseline" ]]; then
  mkdir -p "$(dirname "$baseline")"
  cp "$out/matrix/matrix.json" "$baseline"
  cp "$out/matrix/matrix.json" "$out/baseline.json"
  echo "nightly: wrote the baseline $baseline (commit it); nothing to compare with this time"
  exit 0
fi

echo "== compare with $baseline (tolerance $tolerance)"
compare_code=0
"$oomlab" compare "$baseline" "$out/matrix" --tolerance="$tolerance" --markdown "$out/compare.md" \
  --json "$out/compare.json" --junit "$out/compare.junit.xml" | tee "$out/compare.txt" || compare_code=$?
echo "nightly: compare exited $compare_code (matrix exited $matrix_code)"
exit "$compare_code"
