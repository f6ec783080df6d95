#!/usr/bin/env bash
# exec on the GPU machine against the frameworks themselves (issue 17's validation):
#   tests/data/exec/validate.sh OOMLAB OUT [torch|others|model|all]
# torch: for a training and an inference job, `frontier exec` against PyTorch's own
#   set_per_process_memory_fraction frontier, and the job's memory as NVML and PyTorch count it.
# others: a PyTorch job that runs out of memory under exec (and its report), a JAX job and a
#   CuPy job each with an OOM and a completion, and oomlab killed with SIGKILL mid-run.
# model: for each PyTorch job, `frontier exec` guided by the model (its prediction, its runs)
#   against a blind search (--no-snapshot), then OOM runs whose records hold the model's block,
#   with --check-remedy; model_table.py prints prediction vs measured and the runs.
# Every step's output lands in OUT; nvidia-smi's used memory is logged after each.
set -u
oomlab="$(realpath "$1")"
out="$(realpath -m "$2")"
part="${3:-all}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
step() {  # NAME CMD...: runs it, logs its exit code, time and the device's used memory after
  local name="$1"; shift
  local start=$EPOCHREALTIME
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  printf '%-28s rc=%-3s %6.1f s  used after %s MiB\n' "$name" "$rc" \
    "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$(used)" |
    tee -a "$out/steps.log"
}
echo "used at start $(used) MiB" | tee -a "$out/steps.log"

if [ "$part" = torch ] || [ "$part" = all ]; then
  step context "$oomlab" exec --json "$out/context.json" --quiet -- \
    python3 -c "import torch, time; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); time.sleep(0.3)"
  for job in train_fixed infer_varlen; do
    step "$job.top" "$oomlab" exec --json "$out/$job.top.json" --quiet -- \
      python3 "$here/torch_job.py" "$job" --report
    step "$job.frontier_exec" "$oomlab" frontier exec --timeout 120 --confirm 1 \
      --json "$out/$job.frontier_exec.json" -- python3 "$here/torch_job.py" "$job"
    step "$job.fraction" python3 "$here/fraction_frontier.py" "$job"
  done
fi

if [ "$part" = others ] || [ "$part" = all ]; then
  step torch_oom "$oomlab" exec --budget 2GiB --timeout 120 --out "$out/torch_oom" --force -- \
    python3 "$here/torch_job.py" grow
  step torch_oom.report "$oomlab" report "$out/torch_oom"
  step jax_prealloc "$oomlab" exec --budget 4GiB --timeout 120 --json "$out/jax_prealloc.json" \
    --no-out -- python3 "$here/jax_job.py" 4096
  step jax_ok env XLA_PYTHON_CLIENT_PREALLOCATE=false "$oomlab" exec --budget 4GiB --timeout 120 \
    --json "$out/jax_ok.json" --no-out -- python3 "$here/jax_job.py" 4096
  step jax_oom env XLA_PYTHON_CLIENT_PREALLOCATE=false "$oomlab" exec --budget 4GiB --timeout 120 \
    --json "$out/jax_oom.json" --no-out -- python3 "$here/jax_job.py" 32768
  step cupy_ok "$oomlab" exec --budget 1GiB --timeout 120 --json "$out/cupy_ok.json" --no-out -- \
    python3 "$here/cupy_job.py" 128 2
  step cupy_oom "$oomlab" exec --budget 1GiB --timeout 120 --json "$out/cupy_oom.json" \
    --no-out -- python3 "$here/cupy_job.py" 512 4
  # oomlab killed: the guardian ends the program, the driver frees the ballast.
  before=$(used)
  "$oomlab" exec --budget 8GiB --no-out --quiet -- python3 -c \
    "import torch, time; x = torch.empty(4 << 30, dtype=torch.uint8, device='cuda'); print('holding', flush=True); time.sleep(120)" \
    > "$out/killed.out" 2>&1 &
  victim=$!
  for _ in $(seq 1 100); do grep -q holding "$out/killed.out" && break; sleep 0.2; done
  during=$(used)
  kill -9 "$victim"; wait "$victim" 2>/dev/null
  for _ in $(seq 1 50); do [ "$(used)" -le $((before + 2)) ] && break; sleep 0.2; done
  echo "killed: used before $before MiB, while running $during MiB, after kill -9 $(used) MiB;" \
    "python left: $(pgrep -fc 'time.sleep\(120\)' || true)" | tee -a "$out/steps.log"
fi
# MODEL_JOBS, MODEL_GUIDED=1, MODEL_BLIND=1 and MODEL_OOMS split the model part over calls.
if [ "$part" = model ] || [ "$part" = all ]; then
  for job in ${MODEL_JOBS:-train_fixed infer_varlen train_varlen grow}; do
    if [ "${MODEL_GUIDED:-1}" = 1 ]; then
      step "$job.guided" "$oomlab" frontier exec --timeout 180 --json "$out/$job.guided.json" -- \
        python3 "$here/torch_job.py" "$job"
    fi
    if [ "${MODEL_BLIND:-1}" = 1 ]; then
      step "$job.blind" "$oomlab" frontier exec --no-snapshot --timeout 180 \
        --json "$out/$job.blind.json" -- python3 "$here/torch_job.py" "$job"
    fi
  done
  # OOMs: each budget lies under the job's whole-process frontier with PyTorch's defaults; the
  # last two between it and the frontier with expandable segments (tests/data/pytorch/README.md
  # plus ~0.75 GiB outside the allocator), where the model should name a setting.
  for case in ${MODEL_OOMS-grow:3GiB train_varlen:3300MiB infer_varlen:1800MiB grow:5616MiB}; do
    job="${case%%:*}"; budget="${case#*:}"
    step "oom.$job.$budget" "$oomlab" exec --budget "$budget" --timeout 180 --check-remedy \
      --out "$out/oom.$job.$budget" --force -- python3 "$here/torch_job.py" "$job"
    step "oom.$job.$budget.report" "$oomlab" report "$out/oom.$job.$budget"
  done
  python3 "$here/model_table.py" "$out" | tee "$out/model_table.md"
fi
echo "used at end $(used) MiB" | tee -a "$out/steps.log"
