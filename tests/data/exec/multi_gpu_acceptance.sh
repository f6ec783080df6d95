#!/usr/bin/env bash
# Issue 27's acceptance on the GPU machine, from a staged binary folder (like ci/gpu-check.sh's):
#   tests/data/exec/multi_gpu_acceptance.sh BIN_DIR OUT
# (a) one GPU: `torchrun --nproc-per-node 1 ddp_uneven.py` under `exec` and `frontier exec`;
# (b) with 2 GPUs: the 2-rank job (rank 1 on a 4x heavier batch) run once on the whole cards to
#     measure each device's peak, then under a budget half way between the two peaks (only rank
#     1 should run out): the verdict; the per-device frontier (`frontier exec --devices 0,1`);
#     nvidia-smi's memory on both devices after.
# Each step's files land in OUT; the figures are printed compactly. Meant to take under 8 minutes.
set -u
bin="$(realpath "$1")"
out="$(realpath -m "$2")"
oomlab="$bin/oomlab"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
torchrun=(python3 -m torch.distributed.run --standalone)
job=("$here/ddp_uneven.py" --steps 6)
gpus="$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)"
say() { echo "$@" | tee -a "$out/figures.txt"; }
q() {  # FILE EXPR: a Python expression over the JSON document d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null ||
    echo "(no $1)"
}
timed() {  # NAME CMD...: runs it into OUT/NAME.{out,err}, prints rc and seconds
  local name="$1"; shift
  local start=$EPOCHREALTIME
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  say "$(printf '%-22s rc=%-3s %6.1f s' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")"
}
mem() { nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader | tr '\n' ';'; }
say "gpus: $gpus; memory before: $(mem)"

# (a) one GPU, one rank.
timed one_exec "$oomlab" exec --devices 0 --out "$out/one_exec" --force --timeout 120 -- \
  "${torchrun[@]}" --nproc-per-node 1 "${job[@]}" --batch0 2048 --batch1 2048
say "  outcome $(q "$out/one_exec/summary.json" "d['outcome'], 'peak', d['program']['peak_bytes']>>20, 'MiB', 'snapshots', len(d['program']['snapshots'])")"
timed one_frontier "$oomlab" frontier exec --devices 0 --resolution 128MiB --timeout 120 \
  --json "$out/one_frontier.json" -- "${torchrun[@]}" --nproc-per-node 1 "${job[@]}" \
  --batch0 2048 --batch1 2048
say "  frontier $(q "$out/one_frontier.json" "d['frontier_bytes'], 'runs', d['runs'], 'predicted', d['predicted_bytes']")"

if [ "$gpus" -lt 2 ]; then
  say "one GPU only: (b) not run"
  exit 0
fi

# (b) two ranks, rank 1 on the heavier batch.
two=("${torchrun[@]}" --nproc-per-node 2 "${job[@]}" --batch0 1024 --batch1 4096)
timed two_whole "$oomlab" exec --devices 0,1 --out "$out/two_whole" --force --timeout 120 -- \
  "${two[@]}"
peaks="$(q "$out/two_whole/summary.json" "' '.join(str(u['peak_used_bytes']) for u in d['program']['device_usage'])")"
say "  outcome $(q "$out/two_whole/summary.json" "d['outcome']"); peak taken per device (B): $peaks"
read -r peak0 peak1 <<< "$peaks"
if [ -z "${peak1:-}" ] || [ "$peak1" -le "$peak0" ]; then
  say "rank 1's device did not peak above rank 0's: no budget between them"
  exit 1
fi
budget=$(( (peak0 + peak1) / 2 / 1048576 ))MiB
say "budget on each device: $budget (half way between the two peaks)"
timed two_budget "$oomlab" exec --devices 0,1 --budget "$budget" --grace 10 \
  --out "$out/two_budget" --force --timeout 180 -- "${two[@]}"
say "  outcome $(q "$out/two_budget/summary.json" "d['outcome'], '·', (d['program']['failing_rank'] or {}).get('verdict'), '· ended waiting after', d['program']['waiting_ended_after_s']")"
say "  evidence $(q "$out/two_budget/summary.json" "' | '.join((d['program']['failing_rank'] or {}).get('evidence', []))")"
say "  models $(q "$out/two_budget/summary.json" "[(m['device'], m['snapshot'], m['reproduction'][:60]) for m in ([d['model']] if d['model'] else []) + d.get('other_models', [])]")"
"$oomlab" report "$out/two_budget" > /dev/null 2>&1 && say "  report $out/two_budget/report.html"
timed two_frontier "$oomlab" frontier exec --devices 0,1 --resolution 128MiB --timeout 120 \
  --json "$out/two_frontier.json" -- "${two[@]}"
say "  per-device frontier $(q "$out/two_frontier.json" "d['frontier_bytes'], 'runs', d['runs'], 'predicted', d['predicted_bytes']")"
sleep 2
say "memory after: $(mem)"
