"""PyTorch's own frontier for a job: the smallest set_per_process_memory_fraction cap, to 2 MiB,
at which torch_job.py JOB completes, by bisection on fresh processes (each trial a new Python).

  python fraction_frontier.py JOB [--resolution BYTES]

Prints one JSON line: the frontier, the failing cap under it, the trials, and the job's own
max_memory_reserved uncapped (what the cap is compared against).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def trial(job, cap):
    start = time.time()
    cmd = [sys.executable, os.path.join(HERE, "torch_job.py"), job, "--report"]
    if cap:
        cmd += ["--cap", str(cap)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    report = None
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
    oom = "OutOfMemoryError" in r.stderr or "out of memory" in r.stderr
    return r.returncode == 0, oom, report, time.time() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("--resolution", type=int, default=2 << 20)
    args = parser.parse_args()
    ok, _, report, secs = trial(args.job, None)
    if not ok:
        sys.exit("the job does not complete uncapped")
    trials = [{"cap": None, "completed": True, "seconds": round(secs, 2)}]
    res = args.resolution
    good = -(-report["max_memory_reserved"] // res)  # completes at what it reserved
    bad = 0
    while good - bad > 1:
        mid = (good + bad) // 2
        ok, oom, _, secs = trial(args.job, mid * res)
        trials.append({"cap": mid * res, "completed": ok, "oom": oom, "seconds": round(secs, 2)})
        print(f"  cap {mid * res:>14,} B  {'completed' if ok else 'oom' if oom else 'error'}"
              f"  {secs:.1f} s", file=sys.stderr, flush=True)
        if ok:
            good = mid
        else:
            bad = mid
    print(json.dumps({"job": args.job, "frontier": good * res, "failing": bad * res,
                      "uncapped": report, "trials": trials}), flush=True)


if __name__ == "__main__":
    main()
