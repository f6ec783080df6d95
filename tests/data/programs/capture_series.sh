#!/usr/bin/env bash
# Issue 36's snapshot series on the GPU machine: three real programs (GPT-2 training with
# transformers, ResNet-50 training under cuDNN, the diffusers pipeline), each run in a fresh
# process per batch size, uncapped, with PyTorch's memory history (Python frames) dumped at its
# end by snapshot_run.py:
#   tests/data/programs/capture_series.sh OUT [PROGRAMS...]
# OUT/<program>_b<batch>.pickle, and OUT/figures.txt with each run's time and peak reserved.
# PROGRAMS default to gpt2 resnet sd. Random weights: nothing is downloaded.
set -u
out="$(realpath -m "$1")"
shift
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(gpt2 resnet sd)
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
say() { echo "$@" | tee -a "$out/figures.txt"; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader | head -1)"
say "$(python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())')"
one() {  # NAME BATCH PROGRAM ARGS...
  local name="$1" batch="$2"; shift 2
  local start=$EPOCHREALTIME
  python3 "$here/snapshot_run.py" "$out/${name}_b${batch}.pickle" "$@" > "$out/${name}_b${batch}.log" 2>&1
  local rc=$?
  say "$(printf '%-8s b=%-3s rc=%s %6.1f s  ' "$name" "$batch" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')")$(tail -1 "$out/${name}_b${batch}.log")"
}
for program in "${programs[@]}"; do
  case "$program" in
  gpt2) for b in 1 2 4 8; do one gpt2 "$b" "$here/gpt2_train.py" --batch "$b" --steps 2; done ;;
  resnet) for b in 1 2 4 8 16; do one resnet "$b" "$here/resnet_train.py" --batch "$b" --steps 2; done ;;
  sd) for b in 1 2 4 8; do one sd "$b" "$here/sd_pipeline.py" --batch "$b" --steps 2; done ;;
  *) say "unknown program $program" ;;
  esac
done
say "memory after: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader | head -1)"
