"""Runs one job (jobs.py) on the GPU and writes its memory snapshot, recorded the way the frontier
is measured: one warm-up step, empty_cache(), then the history is switched on and the job runs.
PYTORCH_CUDA_ALLOC_CONF is read from the environment, as PyTorch reads it.

  python3 capture.py JOB OUT.pickle [--cap BYTES] [--frames]

--cap BYTES caps PyTorch with set_per_process_memory_fraction(BYTES / total) from the start: the
job runs until it runs out of memory, and the snapshot is taken after the OutOfMemoryError.
--frames records Python stack frames with every entry (larger files).
"""
import argparse
import json
import pickle
import sys

import torch

from jobs import JOBS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("out")
    parser.add_argument("--cap", type=int)
    parser.add_argument("--frames", action="store_true")
    args = parser.parse_args()

    job = JOBS[args.job]
    fraction = None
    if args.cap:
        fraction = args.cap / torch.cuda.mem_get_info()[1]
        torch.cuda.set_per_process_memory_fraction(fraction)
    job.prepare()
    job.warmup()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    if args.frames:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=1_000_000)
    else:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                 max_entries=1_000_000)
    outcome = "completed"
    message = ""
    try:
        job.run()
        torch.cuda.synchronize()
    except torch.OutOfMemoryError as e:
        outcome = "oom"
        message = str(e).splitlines()[0]
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(args.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    stats = torch.cuda.memory_stats()
    free, total = torch.cuda.mem_get_info()
    print(json.dumps({
        "job": args.job, "out": args.out, "outcome": outcome, "message": message,
        "fraction": fraction,
        "allowed_bytes": int(fraction * total) if fraction else None,
        "entries": len(snapshot["device_traces"][0]),
        "reserved_peak": stats["reserved_bytes.all.peak"],
        "allocated_peak": stats["allocated_bytes.all.peak"],
        "num_ooms": stats["num_ooms"], "num_alloc_retries": stats["num_alloc_retries"],
        "device_total": total,
        "settings": snapshot.get("allocator_settings", {}),
    }), flush=True)


if __name__ == "__main__":
    sys.exit(main())
