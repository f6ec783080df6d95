#!/usr/bin/env bash
# Issue 36's GPU acceptance: `oomlab fit exec` (predicted from its first two runs' snapshots) on
# three real programs, each at the budget of the table in docs/fit.md, with accelerate's finder
# (and Lightning's, on the Lightning job) on the same job under the same ballast; then GPT-2's
# snapshots at batch 3, 5, 6, 7 (1, 2, 4 and 8 are tests/data/series' own) for fit replay's truth.
#   tests/data/programs/fit_series_acceptance.sh BIN_DIR OUT [PARTS...]
# PARTS: sd gpt2 vit pair snaps (default all; pair: frontier exec at batch 13 from the runs at 1
# and 2, and frontier exec's own search at 13). FINDERS=0 leaves the peers' finders out.
# OUT/steps.log has each step's exit code and time.
set -u
oomlab="$(realpath "$1")/oomlab"
out="$(realpath -m "$2")"
shift 2
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(sd gpt2 vit pair snaps)
here="$(cd "$(dirname "$0")" && pwd)"
exec_dir="$(cd "$here/../exec" && pwd)"
mkdir -p "$out"
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
step() {  # NAME CMD...
  local name="$1"; shift
  local start=$EPOCHREALTIME
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  printf '%-22s rc=%-3s %7.1f s  used after %s MiB\n' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$(used)" |
    tee -a "$out/steps.log"
  tail -3 "$out/$name.out" | sed 's/^/    /' | tee -a "$out/steps.log"
}
echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" | tee -a "$out/steps.log"
for part in "${parts[@]}"; do
  case "$part" in
  sd)
    step fit_sd "$oomlab" fit exec --budget 8GiB --range batch=1..32 --json "$out/fit_sd.json" \
      -- python3 "$here/sd_pipeline.py" --batch '{batch}' --steps 4
    [ "${FINDERS:-1}" = 1 ] && step accelerate_sd "$oomlab" exec --budget 8GiB --no-snapshot --no-out --quiet -- \
      python3 "$here/accelerate_finder.py" --start 32 "$here/sd_pipeline.py" --batch '{batch}' --steps 4 ;;
  gpt2)
    step fit_gpt2 "$oomlab" fit exec --budget 12GiB --range batch=1..16 --json "$out/fit_gpt2.json" \
      -- python3 "$here/gpt2_train.py" --batch '{batch}'
    [ "${FINDERS:-1}" = 1 ] && step accelerate_gpt2 "$oomlab" exec --budget 12GiB --no-snapshot --no-out --quiet -- \
      python3 "$here/accelerate_finder.py" --start 16 "$here/gpt2_train.py" --batch '{batch}' ;;
  vit)
    step fit_vit "$oomlab" fit exec --budget 3GiB --range batch=1..256 --json "$out/fit_vit.json" \
      -- python3 "$exec_dir/lightning_fit.py" --batch '{batch}'
    [ "${FINDERS:-1}" = 1 ] && for finder in lightning accelerate; do
      step "${finder}_vit" "$oomlab" exec --budget 3GiB --no-snapshot --no-out --quiet -- \
        python3 "$exec_dir/fit_peers.py" "$finder" --lo 1 --hi 256 --check
    done ;;
  pair)
    step pair_sd "$oomlab" frontier exec --budget 8GiB --from batch=1,2 --at batch=13 \
      --json "$out/pair_sd.json" -- python3 "$here/sd_pipeline.py" --batch '{batch}' --steps 4
    step real_sd "$oomlab" frontier exec --budget 8GiB --resolution 32MiB \
      --json "$out/real_sd.json" -- python3 "$here/sd_pipeline.py" --batch 13 --steps 4 ;;
  snaps)
    mkdir -p "$out/series"
    for b in 3 5 6 7; do
      step "snap_gpt2_b$b" python3 "$here/snapshot_run.py" "$out/series/gpt2_b$b.pickle" \
        "$here/gpt2_train.py" --batch "$b" --steps 2
    done
    tar -C "$out/series" -czf "$out/series.tgz" . && rm -r "$out/series" ;;
  esac
done
