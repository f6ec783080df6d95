#!/usr/bin/env bash
# Issue 33's captures on the GPU machine, from a staged binary folder (like ci/gpu-check.sh's):
#   tests/data/programs/capture_diagnosis.sh BIN_DIR OUT [PARTS...]
# Runs real programs under `oomlab exec` at budgets where each shows one thing the diagnosis must
# get right, and packs each run folder (summary.json, stdout/stderr, snapshots, timelines) as
# OUT/<part>.tgz: gpt2 (GPT-2 training dying in cuBLAS at 12 GiB), sd (the diffusers pipeline's
# VAE decode at batch 14 on 8 GiB, with Python stacks), resnet (ResNet-50 under cuDNN: whole card,
# then budgets under its peak where it survives refused workspaces), ddp (two ranks, one budget
# half way between their peaks), resnet_edge (budgets just above ResNet-50's frontier, where it
# may survive refused workspaces). PARTS default to gpt2 sd resnet ddp (ddp only with two GPUs).
# Each run folder also gets `oomlab report`'s report.html.
set -u
bin="$(realpath "$1")"
out="$(realpath -m "$2")"
shift 2
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(gpt2 sd resnet ddp)
oomlab="$bin/oomlab"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
mkdir -p "$out"
say() { echo "$@" | tee -a "$out/figures.txt"; }
q() {  # FILE EXPR: a Python expression over the JSON document d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null ||
    echo "(no $1)"
}
mem() { nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tr '\n' ';'; }
ex() {  # NAME EXEC-ARGS... -- PROGRAM...: one exec into WORK/NAME, its console beside it
  local name="$1"; shift
  local start=$EPOCHREALTIME
  "$oomlab" exec --out "$work/$name" --force --timeout 240 "$@" > "$work/$name.console" 2>&1
  local rc=$?
  cp "$work/$name.console" "$work/$name/console.txt" 2>/dev/null
  "$oomlab" report "$work/$name" > /dev/null 2>&1 || true  # report.html and report.md
  say "$(printf '%-16s rc=%-3s %6.1f s  ' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")$(q "$work/$name/summary.json" "d['outcome'], (d.get('oom') or {}).get('program', {}).get('line', '')[:150]")"
}
pack() { tar -C "$work" -czf "$out/$1.tgz" "${@:2}" && say "packed $1.tgz: $(du -h "$out/$1.tgz" | cut -f1)"; }
say "gpus: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); memory before: $(mem)"
say "torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"

for part in "${parts[@]}"; do
  case "$part" in
  gpt2)
    ex gpt2_b7 --budget 12GiB --check-remedy -- python3 "$here/gpt2_train.py" --batch 7
    ex gpt2_b6 --budget 12GiB -- python3 "$here/gpt2_train.py" --batch 6
    pack gpt2 gpt2_b7 gpt2_b6 ;;
  sd)
    ex sd_b14 --budget 8GiB --check-remedy --snapshot-stacks python -- \
      python3 "$here/sd_pipeline.py" --batch 14
    python3 - "$work/sd_b14" <<'PY' | tee -a "$out/figures.txt"
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/snapshot-*.pickle"):
    s = pickle.load(open(f, "rb"))
    t = [e for d in s["device_traces"] for e in d]
    withf = sum(1 for e in t if e.get("frames"))
    ooms = [e for e in t if e["action"] == "oom"]
    print(f, "entries", len(t), "with frames", withf, "ooms", len(ooms),
          "oom frames", [len(e.get("frames", [])) for e in ooms][:3],
          "first frames", (ooms[0].get("frames") or [])[:4] if ooms else None)
PY
    pack sd sd_b14 ;;
  resnet)
    ex resnet_whole -- python3 "$here/resnet_train.py" --batch 64 --benchmark
    peak="$(q "$work/resnet_whole/summary.json" "d['program']['peak_bytes']")"
    for pct in 92 84 76; do
      budget=$(( peak * pct / 100 / 1048576 ))MiB
      ex "resnet_$pct" --budget "$budget" -- python3 "$here/resnet_train.py" --batch 64 --benchmark
      python3 - "$work/resnet_$pct" <<'PY' | tee -a "$out/figures.txt"
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/snapshot-*.pickle"):
    t = [e for d in pickle.load(open(f, "rb"))["device_traces"] for e in d]
    ooms = [e for e in t if e["action"] == "oom"]
    print("  ", f.split("/")[-2], "entries", len(t), "ooms", len(ooms),
          "sizes MiB", sorted({e["size"] >> 20 for e in ooms})[:8])
PY
    done
    pack resnet resnet_whole resnet_92 resnet_84 resnet_76 ;;
  resnet_edge)
    # Just above the batch-64 frontier (~6.45-6.6 GiB on an H100, 2026-11-27), where cuDNN's
    # workspaces are refused and the program may go on.
    for budget in 6480 6500 6520 6540 6560; do
      ex "resnet_${budget}MiB" --budget "${budget}MiB" -- \
        python3 "$here/resnet_train.py" --batch 64 --benchmark
      python3 - "$work/resnet_${budget}MiB" <<'PY' | tee -a "$out/figures.txt"
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/snapshot-*.pickle"):
    t = [e for d in pickle.load(open(f, "rb"))["device_traces"] for e in d]
    ooms = [i for i, e in enumerate(t) if e["action"] == "oom"]
    print("  ", f.split("/")[-2], "entries", len(t), "ooms at", ooms[:6])
PY
    done
    pack resnet_edge $(cd "$work" && ls -d resnet_*MiB) ;;
  ddp)
    if [ "$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)" -lt 2 ]; then
      say "one GPU only: ddp not run"; continue
    fi
    two=(python3 -m torch.distributed.run --standalone --nproc-per-node 2
      "$here/../exec/ddp_uneven.py" --steps 4 --batch0 1024 --batch1 8192)
    ex ddp_whole --devices 0,1 -- "${two[@]}"
    peaks="$(q "$work/ddp_whole/summary.json" "' '.join(str(u['peak_used_bytes']) for u in d['program']['device_usage'])")"
    read -r peak0 peak1 <<< "$peaks"
    budget=$(( (peak0 + peak1) / 2 / 1048576 ))MiB
    say "ddp peaks $peaks; budget $budget"
    ex ddp_budget --devices 0,1 --budget "$budget" --grace 10 -- "${two[@]}"
    pack ddp ddp_whole ddp_budget ;;
  esac
done
sleep 1
say "memory after: $(mem)"
rm -rf "$work"
