"""What recording PyTorch's memory history (as `oomlab exec`'s snapshot shim starts it) costs one
step of a job from tests/data/pytorch/jobs.py, measured in one process on one GPU: rounds that
alternate recording off, recording as the shim's default does (alloc/free and segment events, no
stacks) and with Python stacks (--snapshot-stacks python), each round the median of --steps
steps after --warmup, every step timed to torch.cuda.synchronize(). Then what writing the
snapshot of that history costs (torch.cuda.memory._snapshot() and pickle, as at an OOM or exit).
Prints one JSON line. Run it directly, not under `oomlab exec` (whose shim records already):

  python3 snapshot_cost.py [JOB] [--steps 50] [--warmup 5] [--rounds 3]
"""
import argparse
import json
import os
import pickle
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from jobs import JOBS  # noqa: E402

MODES = {
    "off": None,
    "recording": {"enabled": "all", "context": None, "stacks": "python"},
    "python_stacks": {"enabled": "all", "context": "alloc", "stacks": "python"},
}


def step_ms(job, i):
    start = time.perf_counter()
    job.run_step(i % job.steps)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def median_step_ms(job, mode, steps, warmup):
    if MODES[mode] is not None:
        torch.cuda.memory._record_memory_history(**MODES[mode])
    try:
        for i in range(warmup):
            step_ms(job, i)
        return statistics.median(step_ms(job, i) for i in range(steps))
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)


def snapshot_cost(job, steps):
    """The history of `steps` recorded steps, then one snapshot written as the shim writes it."""
    torch.cuda.memory._record_memory_history(**MODES["recording"], clear_history=True)
    for i in range(steps):
        step_ms(job, i)
    start = time.perf_counter()
    data = pickle.dumps(torch.cuda.memory._snapshot())
    took = (time.perf_counter() - start) * 1e3
    entries = sum(len(t) for t in torch.cuda.memory._snapshot()["device_traces"])
    torch.cuda.memory._record_memory_history(enabled=None)
    return {"entries": entries, "bytes": len(data), "ms": round(took, 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("job", nargs="?", default="train_fixed", choices=sorted(JOBS))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    job = JOBS[args.job]
    job.prepare()
    job.warmup()
    rounds = {mode: [] for mode in MODES}
    for _ in range(args.rounds):  # interleaved: a drift of the clock touches every mode alike
        for mode in MODES:
            rounds[mode].append(median_step_ms(job, mode, args.steps, args.warmup))
    ms = {mode: statistics.median(values) for mode, values in rounds.items()}
    print(json.dumps({
        "job": args.job,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "steps": args.steps,
        "rounds": args.rounds,
        "step_ms": {mode: round(value, 3) for mode, value in ms.items()},
        "overhead_percent": {mode: round(100.0 * (ms[mode] / ms["off"] - 1.0), 2)
                             for mode in MODES if mode != "off"},
        "rounds_ms": {mode: [round(v, 3) for v in values] for mode, values in rounds.items()},
        "snapshot_after_steps": snapshot_cost(job, args.steps),
    }), flush=True)


if __name__ == "__main__":
    main()
