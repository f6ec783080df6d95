"""One of tests/data/pytorch/jobs.py's PyTorch jobs as a program of its own, for `oomlab exec`:
build the model, one warm-up step, the job, exit 0 (an OutOfMemoryError ends it with PyTorch's
own message and exit 1, as in any training script).

  python torch_job.py JOB [--cap BYTES] [--report]

--cap: PyTorch's own limit, set_per_process_memory_fraction(BYTES / the device's total), before
anything is allocated: the frontier PyTorch itself would report.
--report: print what PyTorch counted at the end, as one JSON line.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from jobs import JOBS  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("--cap", type=int)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    if args.cap:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.cap / total), 0)
    job = JOBS[args.job]
    job.prepare()
    job.warmup()
    job.run()
    torch.cuda.synchronize()
    if args.report:
        print(json.dumps({
            "job": args.job,
            "max_memory_reserved": torch.cuda.max_memory_reserved(),
            "max_memory_allocated": torch.cuda.max_memory_allocated(),
            "memory_reserved": torch.cuda.memory_reserved(),
            "device_total": torch.cuda.get_device_properties(0).total_memory,
        }), flush=True)


if __name__ == "__main__":
    main()
