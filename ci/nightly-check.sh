#!/usr/bin/env bash
# The nightly checked as a GPU fleet runs it, on a GPU runner with a committed baseline (the H100's):
# ci/nightly.sh started from a stand-in fleet checkout (a folder of its own), its programs given by
# paths relative to that checkout, every scenario cell at the baseline's settings. Two nights:
#   1. the scenario cells and a program that completes: exit 0, no regression, the program
#      `added` (scenario cells that moved from the baseline without a regression are listed);
#   2. the same and a program whose file is not there: exit 1, that cell named with python's own
#      message ("can't open file '<fleet>/jobs/missing.py'"), compare's `new-failure`.
# Prints each night's exit code and verdicts, then PASS or FAIL (exit 1).
#
#   ci/nightly-check.sh [BIN_DIR=.gpu] [--out DIR=nightly-check-out]
#
# The completing program is jobs/fit.py (PyTorch: two 256 MiB tensors and a matmul) where python3
# imports torch, else oomlab_cuda_hog from BIN_DIR (1 GiB, held 1 s). The baselines are copied, so
# ci/baselines is never written. NIGHTLY_REPEAT is 1 here (the baseline's 3 would take two nights
# of about 5 minutes on the H100): cells match whatever the repeat count.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin=".gpu"
out="nightly-check-out"
while (($# > 0)); do
  case "$1" in
    --out)
      if (($# < 2)) || [[ -z "$2" || "$2" == -* ]]; then
        echo "nightly-check: --out needs a folder: --out DIR (see --help)" >&2
        exit 2
      fi
      out="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) bin="$1"; shift ;;
  esac
done
bin="$(cd "$bin" && pwd)" || { echo "nightly-check: no folder $bin" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/fleet/jobs"
out="$(cd "$out" && pwd)"
fleet="$out/fleet"
cp -r "$root/ci/baselines" "$out/baselines"

# The baseline's settings (ci/baselines/*.json config), whatever the caller's environment says.
export NIGHTLY_SCENARIOS=all NIGHTLY_ALLOCATORS=cuda,async,managed NIGHTLY_BUDGET=4GiB \
  NIGHTLY_SEED=1 NIGHTLY_REPEAT="${NIGHTLY_REPEAT:-1}" NIGHTLY_TIMEOUT=600 NIGHTLY_TOLERANCE=2% \
  NIGHTLY_DEVICES=0 NIGHTLY_BASELINES="$out/baselines"

cat >"$fleet/jobs/fit.py" <<'EOF'
# A fleet's small job: two 256 MiB tensors and a matmul, well under the nightly's 4 GiB.
import torch

x = torch.randn(8192, 8192, device="cuda")
y = x @ x
torch.cuda.synchronize()
print(f"fit: {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB at its peak")
EOF
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  fits="fits=python3 jobs/fit.py"
else
  echo "nightly-check: python3 has no CUDA torch here: the completing program is oomlab_cuda_hog"
  for hog in "$bin/oomlab_cuda_hog" "$bin/tests/oomlab_cuda_hog"; do
    [[ -x "$hog" ]] && cp "$hog" "$fleet/jobs/hog" && break
  done
  fits="fits=./jobs/hog 1073741824 1"
fi
broken="broken=python3 jobs/missing.py --steps 30"

failures=0
# night NAME EXPECTED_EXIT NIGHTLY_EXEC: one nightly from the fleet's checkout.
night() {
  local name="$1" expected="$2" code=0
  echo "== night $name: NIGHTLY_EXEC=${3//$'\n'/ | }"
  (cd "$fleet" && NIGHTLY_EXEC="$3" bash "$root/ci/nightly.sh" --bin "$bin" --out "$out/$name") \
    >"$out/$name.log" 2>&1 || code=$?
  tail -n 8 "$out/$name.log"
  echo "night $name: exit $code (expected $expected)"
  if ((code != expected)); then failures=$((failures + 1)); fi
  if [[ ! -f "$out/$name/compare.txt" ]]; then
    echo "nightly-check: night $name compared with no baseline (is there one for this GPU and driver in ci/baselines?)"
    failures=$((failures + 1))
  fi
}
expect_in() {  # FILE TEXT: the night's file says TEXT
  if ! grep -qsF -- "$2" "$1"; then
    echo "nightly-check: $1 does not say: $2"
    failures=$((failures + 1))
  fi
}

# A scenario cell that moved from the baseline without a regression (later-oom, within-tolerance
# drift) is the baseline's business, not the nightly's: it is listed, and the night stays green.
drift() {  # NIGHT: the scenario cells whose verdict is not `same`
  awk '/^scenario / { table = 1; next } table && NF == 0 { table = 0 }
       table && $1 !~ /^exec:/ && $NF != "same" { print "  moved from the baseline: " $0 }' \
    "$out/$1/compare.txt" 2>/dev/null
}
night completes 0 "$fits"
expect_in "$out/completes/compare.txt" "no regression in 16 cells"
expect_in "$out/completes/compare.txt" "added"
drift completes
night errors 1 "$fits"$'\n'"$broken"
expect_in "$out/errors/compare.txt" "REGRESSION: 1 of 17 cells (1 new-failure)"
expect_in "$out/errors.log" "exec:broken on exec: error: "
expect_in "$out/errors.log" "$fleet/jobs/missing.py"  # python resolved it in the fleet's checkout
expect_in "$out/errors/compare.md" "**new-failure**"

if ((failures == 0)); then echo "nightly-check: PASS"; exit 0; fi
echo "nightly-check: FAIL ($failures)"
exit 1
