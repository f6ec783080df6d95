#!/usr/bin/env bash
# The nightly job of a GPU runner: build, `oomlab info`, the matrix with fixed seeds and budget,
# the report, and `compare` against the baseline of this GPU model and driver family
# (ci/baselines/<gpu>-<driver major>.json), or, on the night of a driver upgrade (none for this
# driver yet), against the same GPU model's nearest older driver's, writing this driver's
# baseline only when that comparison is clean (exit 0) and keeping the older one. Exits with the
# worse of the matrix's and compare's codes: 0 every cell ran and nothing regressed; 1 a cell that
# crashed, timed out or ended in error (whether or not the baseline has it: compare calls a new one
# `new-failure`), or a regression (earlier OOM, new OOM); 6 baseline cells missing from the run or
# nothing matched (another budget, seed or scenario list than the baseline's); 5 a file could not
# be written; 2 bad usage or input; 130 interrupted. The failing cells are named, with their own messages, at the end.
# Everything it makes lands in one folder (the CI uploads it).
#
#   ci/nightly.sh [--out DIR] [--bin DIR] [--refresh-baseline]
#
#   --out DIR            artifacts (default nightly-out/): replaced on each run, so only a folder
#                        an earlier night wrote (marked .oomlab-nightly), an empty one or a new
#                        one; any other is refused (exit 2) and left as it was
#   --bin DIR            use the oomlab binary in DIR instead of building (ci/stage-gpu.sh's .gpu)
#   --refresh-baseline   write this run as the baseline for this GPU and driver family (the
#                        workflow's manual trigger), without comparing; with no baseline for this
#                        GPU at or below its driver the run becomes one. A run with a failing cell
#                        is never written as the baseline: it exits 1.
#
# Settings (environment): NIGHTLY_SCENARIOS=all NIGHTLY_ALLOCATORS=cuda,async,managed
# NIGHTLY_BUDGET=4GiB NIGHTLY_SEED=1 NIGHTLY_REPEAT=3 NIGHTLY_TIMEOUT=600 NIGHTLY_TOLERANCE=2%
# NIGHTLY_DEVICES=0 NIGHTLY_BASELINES=<oomlab>/ci/baselines. NIGHTLY_SCENARIOS is a list
# (fragmentation,leak) or all; `replay` replays oomlab's own PyTorch sample trace.
# NIGHTLY_EXEC: the fleet's own programs as matrix cells, one NAME=COMMAND a line (oomlab exec,
# under the same budget), e.g. NIGHTLY_EXEC=$'train=python3 train.py --steps 50\nserve=./bench'.
# Programs, and relative paths given to this script, are taken from the directory it was started
# in (the fleet's checkout), not from oomlab's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="nightly-out"
bin=""
refresh=0
# A flag's value is the next word: none, an empty one or another flag is refused naming the flag
# (bash's own "$2: unbound variable" named neither the flag nor what it wants).
needs_value() {
  if (($# < 2)) || [[ -z "$2" || "$2" == -* ]]; then
    echo "nightly: $1 needs a folder: $1 DIR (see --help)" >&2
    exit 2
  fi
}
while (($# > 0)); do
  case "$1" in
    --out) needs_value "$@"; out="$2"; shift 2 ;;
    --bin) needs_value "$@"; bin="$2"; shift 2 ;;
    --refresh-baseline) refresh=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "nightly: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# --bin is looked at before anything is built, written or removed.
if [[ -n "$bin" && ! -d "$bin" ]]; then
  echo "nightly: --bin $bin: no such folder (give the folder holding the oomlab binary)" >&2
  exit 2
fi
if [[ -n "$bin" && ! -x "$bin/oomlab" ]]; then
  echo "nightly: --bin $bin: no oomlab binary in it" >&2
  exit 2
fi
# The folder is emptied and written anew: only one that this script wrote (it holds the marker
# below), an empty one or none at all; another is refused before anything is touched.
marker=".oomlab-nightly"
if [[ -e "$out" || -L "$out" ]]; then
  if [[ ! -d "$out" || -L "$out" ]]; then
    echo "nightly: --out $out is not a folder: refusing to replace it (give a new or empty folder)" >&2
    exit 2
  fi
  if [[ ! -f "$out/$marker" && -n "$(ls -A "$out")" ]]; then
    echo "nightly: --out $out holds files this script did not write (no $marker in it): refusing to delete them (give a new or empty folder)" >&2
    exit 2
  fi
fi
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
echo "written by oomlab's ci/nightly.sh, which replaces this folder on its next run" >"$out/$marker"
out="$(cd "$out" && pwd)"
# No `cd`: the fleet's programs run where the caller is. oomlab's own trace is found by an absolute
# path; the matrix keys a file by its name and content, so the keys do not depend on either place.
trace="$root/tests/data/pytorch_gpt_fp32_snapshot.pickle"
params=()
if [[ "$scenarios" == all || ",${scenarios// /}," == *,replay,* ]]; then
  params=(--param "trace=$trace")
fi

echo "== oomlab info"
"$oomlab" info | tee "$out/info.txt" || echo "nightly: oomlab info found no usable device"
"$oomlab" info --json >"$out/info.json" || true

# The baseline's name: the GPU model and the driver's major version ("NVIDIA H100 80GB HBM3",
# 580.159.04 -> nvidia-h100-80gb-hbm3-580), so each runner label compares with its own kind.
# Without one for this driver (the night of an upgrade) the night compares with the same GPU
# model's nearest older driver's baseline and writes its own only if that comparison is clean.
pick_code=0
pick=$("$oomlab" compare --pick-baseline "$baselines" "$out/info.json") || pick_code=$?
if ((pick_code != 0)); then echo "nightly: cannot choose a baseline in $baselines" >&2; exit 2; fi
baseline=$(sed -n 's/^own=//p' <<<"$pick")
chosen=$(sed -n 's/^baseline=//p' <<<"$pick")
upgrade=$(sed -n 's/^upgrade=//p' <<<"$pick")
echo "baseline: $baseline"
echo "nightly: $(sed -n 's/^note=//p' <<<"$pick")"
if [[ "$upgrade" == yes ]]; then
  echo "nightly: a driver upgrade: comparing with $chosen"
fi

echo "== matrix ($scenarios x $allocators, budget $budget, seed $seed, $repeat runs a cell)"
matrix_code=0
"$oomlab" matrix --scenarios="$scenarios" --allocators="$allocators" --budget="$budget" --seed="$seed" \
  --repeat="$repeat" --timeout="$timeout" --devices="$devices" "${params[@]}" "${execs[@]}" \
  --out "$out/matrix" --junit "$out/matrix.junit.xml" | tee "$out/matrix.txt" || matrix_code=$?
if ((matrix_code == 2)); then echo "nightly: the matrix refused its arguments" >&2; exit 2; fi
if ((matrix_code == 130)); then echo "nightly: interrupted" >&2; exit 130; fi
# matrix: 1 a cell could not run (error), 4 a cell crashed or timed out: either fails the night.
cells_failed=0
if ((matrix_code == 1 || matrix_code == 4)); then cells_failed=1; fi

# The failing cells with their own messages, as the matrix's table lists them under its rows.
say_failed_cells() {
  echo "nightly: FAILED: cells that crashed, timed out or ended in error (matrix exited $matrix_code):"
  grep '^  ' "$out/matrix.txt" || echo "  (see $out/matrix.txt)"
}

echo "== report"
"$oomlab" report "$out/matrix"

if ((refresh == 1)) || [[ -z "$chosen" ]]; then
  if ((cells_failed == 1)); then
    say_failed_cells
    echo "nightly: did not write the baseline $baseline: a baseline holds only cells that ran"
    exit 1
  fi
  mkdir -p "$(dirname "$baseline")"
  cp "$out/matrix/matrix.json" "$baseline"
  cp "$out/matrix/matrix.json" "$out/baseline.json"
  echo "nightly: wrote the baseline $baseline (commit it); nothing to compare with this time"
  exit "$matrix_code"
fi

echo "== compare with $chosen (tolerance $tolerance)"
compare_code=0
"$oomlab" compare "$chosen" "$out/matrix" --tolerance="$tolerance" --markdown "$out/compare.md" \
  --json "$out/compare.json" --junit "$out/compare.junit.xml" | tee "$out/compare.txt" || compare_code=$?
# The worse of the two: a failing cell or a regression (1) before anything compare says otherwise
# (6 incomplete, 2 a bad baseline, 5 a file not written), then the matrix's own 5.
code=$compare_code
if ((cells_failed == 1)); then
  code=1
elif ((compare_code == 0)); then
  code=$matrix_code
fi
if ((cells_failed == 1)); then say_failed_cells; fi
# The night of an upgrade: the new driver's baseline only from a clean comparison; the older
# driver's stays as it was.
if [[ "$upgrade" == yes ]]; then
  if ((code == 0)); then
    mkdir -p "$(dirname "$baseline")"
    cp "$out/matrix/matrix.json" "$baseline"
    cp "$out/matrix/matrix.json" "$out/baseline.json"
    echo "nightly: the comparison with $chosen is clean: wrote the baseline $baseline (commit it); $chosen is kept"
  else
    echo "nightly: did not write the baseline $baseline: the comparison with $chosen is not clean (exit $code)"
  fi
fi
echo "nightly: compare exited $compare_code (matrix exited $matrix_code): the night exits $code"
exit "$code"
