#!/usr/bin/env bash
# `oomlab fit exec` on the GPU machine against a fresh-process search by hand and against the
# in-process finders (issue 24's acceptance), on lightning_fit.py's job:
#   tests/data/exec/fit_acceptance.sh OOMLAB OUT BUDGET [fit|expandable|hand|peers|all] [HI]
# fit: `fit exec` guided by the model (snapshots on) and plain (--no-snapshot), each timed.
# expandable: the same two with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
# hand: `oomlab exec` at the guided answer's neighbours (answer-1 .. answer+2), each a fresh
#   process: the answer must complete and the value above it fail.
# peers: Lightning's BatchSizeFinder (binsearch) and accelerate's find_executable_batch_size,
#   each in its own process under the same ballast (fit_peers.py), timed, each then training at
#   its own answer in that process (--check).
# Every step's output lands in OUT; steps.log has each step's exit code, seconds and the device's
# used memory after it; summary.txt the answers side by side.
set -u
oomlab="$(realpath "$1")"
out="$(realpath -m "$2")"
budget="$3"
part="${4:-all}"
hi="${5:-256}"
here="$(cd "$(dirname "$0")" && pwd)"
job=(python3 "$here/lightning_fit.py" --batch '{batch}')
mkdir -p "$out"
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
step() {  # NAME CMD...: runs it, logs its exit code, time and the device's used memory after
  local name="$1"; shift
  local start=$EPOCHREALTIME
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  printf '%-24s rc=%-3s %7.1f s  used after %s MiB\n' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$(used)" |
    tee -a "$out/steps.log"
}
field() {  # FILE KEY: a top-level field of a JSON file
  python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))" "$1" "$2"
}
echo "budget $budget, range batch=1..$hi; used at start $(used) MiB" | tee -a "$out/steps.log"

if [ "$part" = fit ] || [ "$part" = all ]; then
  step fit_guided "$oomlab" fit exec --budget "$budget" --range "batch=1..$hi" \
    --json "$out/fit_guided.json" -- "${job[@]}"
  step fit_plain "$oomlab" fit exec --budget "$budget" --range "batch=1..$hi" --no-snapshot \
    --json "$out/fit_plain.json" -- "${job[@]}"
fi
if [ "$part" = expandable ] || [ "$part" = all ]; then
  export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  step fit_guided_expandable "$oomlab" fit exec --budget "$budget" --range "batch=1..$hi" \
    --json "$out/fit_guided_expandable.json" -- "${job[@]}"
  step fit_plain_expandable "$oomlab" fit exec --budget "$budget" --range "batch=1..$hi" \
    --no-snapshot --json "$out/fit_plain_expandable.json" -- "${job[@]}"
  unset PYTORCH_CUDA_ALLOC_CONF
fi
if [ "$part" = hand ] || [ "$part" = all ]; then
  answer="$(field "$out/fit_guided.json" value 2>/dev/null || field "$out/fit_plain.json" value)"
  for b in $((answer - 1)) "$answer" $((answer + 1)) $((answer + 2)); do
    step "hand_$b" "$oomlab" exec --budget "$budget" --no-snapshot --no-out \
      --json "$out/hand_$b.json" --quiet -- python3 "$here/lightning_fit.py" --batch "$b"
    echo "  batch $b: $(field "$out/hand_$b.json" outcome)" | tee -a "$out/steps.log"
  done
fi
if [ "$part" = peers ] || [ "$part" = all ]; then
  for finder in lightning accelerate; do
    step "peer_$finder" "$oomlab" exec --budget "$budget" --no-snapshot --no-out --quiet -- \
      python3 "$here/fit_peers.py" "$finder" --lo 1 --hi "$hi" --check
    tail -1 "$out/peer_$finder.out" | tee -a "$out/steps.log"
  done
fi
{
  for f in "$out"/fit_*.json; do
    [ -e "$f" ] || continue
    printf '%-28s value %-5s runs %-3s predicted %s\n' "$(basename "$f" .json)" \
      "$(field "$f" value)" "$(field "$f" runs)" "$(field "$f" predicted)"
  done
  for f in "$out"/peer_*.out; do
    [ -e "$f" ] || continue
    printf '%-28s %s\n' "$(basename "$f" .out)" "$(tail -1 "$f")"
  done
} | tee "$out/summary.txt"
