#!/usr/bin/env bash
# The ground-truth session on the GPU machine (PyTorch 2.11, CuPy): allocator facts, snapshots of
# every job, and the real frontiers. Writes everything under $OUT (a few archives: the device tool
# brings back at most 8 files).   bash tests/data/pytorch/gpu_session.sh [FRONTIER_SECONDS]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp/oomlab-pytorch}"
mkdir -p "$out/snap"
cd "$here"
export PYTHONUNBUFFERED=1
python3 -c 'import torch, cupy; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.mem_get_info())'
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv
inc="$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))')"
tar czf "$out/headers.tgz" -C "$inc" c10/cuda c10/core 2>/dev/null
echo "== rules"
timeout 240 python3 probe_rules.py | tee "$out/rules.jsonl"
echo "== captures"
cap() {  # name conf job [args]
  local name=$1 conf=$2; shift 2
  PYTORCH_CUDA_ALLOC_CONF="$conf" timeout 120 python3 capture.py "$@" "$out/snap/$name.pickle" 2>&1 | tail -1 | tee -a "$out/captures.jsonl"
}
cap train_fixed_native "" train_fixed --frames
cap infer_varlen_native "" infer_varlen
cap train_varlen_native "" train_varlen
cap grow_native "" grow
cap grow_cap3g_native "" grow --cap 3221225472
cap grow_cap2g_native "" grow --cap 2147483648
cap train_varlen_expandable "expandable_segments:True" train_varlen
cap infer_varlen_expandable "expandable_segments:True" infer_varlen
cap grow_cap3g_expandable "expandable_segments:True" grow --cap 3221225472
(cd "$out/snap" && tar czf "$out/snapshots.tgz" *.pickle && ls -l)
rm -rf "$out/snap"
echo "== frontiers"
python3 measure_frontier.py --out "$out/frontiers.json" --deadline "${1:-330}" 2>"$out/frontier_trials.log"
tail -5 "$out/frontier_trials.log"
nvidia-smi --query-gpu=memory.used --format=csv
