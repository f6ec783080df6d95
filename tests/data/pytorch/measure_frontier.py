"""Measures a job's real frontier on the GPU: the smallest budget (to 2 MiB) at which it completes,
for one allocator configuration. The method (tests/data/pytorch/README.md, "Frontiers"):

  in a fresh process: build the model, one warm-up step, empty_cache(); then hold a raw cudaMalloc
  (CuPy) of free + memory_reserved() - budget, so that PyTorch has `budget` bytes on the card in
  all (what it holds already included), run the job, free the ballast.

Each trial is a child forked from a process that has imported torch but not touched CUDA, so every
trial starts with a fresh CUDA context. The bisection starts between the job's peak allocated
bytes (it cannot fit below them) and its peak reserved bytes when unconstrained (plus a margin),
then checks the frontier and the budget 2 MiB below it again (--confirm times each).

  python3 measure_frontier.py --jobs train_fixed,grow --configs native,expandable,async \
      --out frontiers.json [--confirm 1] [--deadline 500]
"""
import argparse
import json
import os
import subprocess
import sys
import time

MIB = 1 << 20
PAGE = 2 * MIB
CONFIGS = {
    "native": "",
    "expandable": "expandable_segments:True",
    "async": "backend:cudaMallocAsync",
}


def child(job_name, budget):
    import cupy
    import torch

    from jobs import JOBS

    job = JOBS[job_name]
    job.prepare()
    job.warmup()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    reserved = torch.cuda.memory_reserved()
    ballast = None
    result = {"budget": budget, "reserved_at_start": reserved, "backend":
              torch.cuda.get_allocator_backend()}
    if budget is not None:
        want = (free + reserved - budget) // PAGE * PAGE
        if want < 0:
            result.update(outcome="over", message="budget over free memory")
            return result
        if want > 0:
            ballast = cupy.cuda.runtime.malloc(want)
        result["ballast"] = want
    result["effective"] = torch.cuda.mem_get_info()[0] + reserved
    torch.cuda.reset_peak_memory_stats()
    start = time.monotonic()
    try:
        job.run()
        torch.cuda.synchronize()
        result["outcome"] = "completed"
    except torch.OutOfMemoryError as e:
        result.update(outcome="oom", message=str(e).splitlines()[0][:300])
    except RuntimeError as e:
        text = str(e)
        oom = "out of memory" in text or "ALLOC_FAILED" in text
        result.update(outcome="oom" if oom else "error", message=text.splitlines()[0][:300])
    finally:
        if ballast is not None:
            cupy.cuda.runtime.free(ballast)
    result["seconds"] = round(time.monotonic() - start, 3)
    stats = torch.cuda.memory_stats()
    result["reserved_peak"] = stats.get("reserved_bytes.all.peak", 0)
    result["allocated_peak"] = stats.get("allocated_bytes.all.peak", 0)
    return result


def trial(job_name, budget):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = child(job_name, budget)
        except BaseException as e:  # noqa: BLE001 - everything goes back to the parent
            result = {"budget": budget, "outcome": "error", "message": repr(e)[:300]}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    if not chunks:
        return {"budget": budget, "outcome": "error", "message": "the trial died"}
    return json.loads(b"".join(chunks))


def worker(job_name, config, confirm, deadline):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch  # noqa: F401 - imported once here, before any fork; CUDA is not touched

    trials = []

    def run(budget):
        r = trial(job_name, budget)
        trials.append(r)
        print(f"  {job_name}/{config}: budget {budget} -> {r.get('outcome')} "
              f"{r.get('message', '')[:120]}", file=sys.stderr, flush=True)
        return r

    free_run = run(None)
    out = {"job": job_name, "config": config, "unconstrained": free_run, "trials": trials}
    if free_run.get("outcome") != "completed":
        return out
    lo = (free_run["allocated_peak"] - 1) // PAGE  # in pages: never fits
    hi_bytes = free_run["reserved_peak"] + 32 * MIB
    hi = (hi_bytes + PAGE - 1) // PAGE
    while run(hi * PAGE).get("outcome") != "completed":
        if time.monotonic() > deadline:
            return out
        lo, hi = hi, hi * 5 // 4 + 16
    while hi - lo > 1 and time.monotonic() < deadline:
        mid = (lo + hi) // 2
        if run(mid * PAGE).get("outcome") == "completed":
            hi = mid
        else:
            lo = mid
    out["frontier"] = hi * PAGE if hi - lo == 1 else None
    out["failing"] = lo * PAGE
    out["confirm"] = []
    for _ in range(confirm):
        if time.monotonic() > deadline:
            break
        out["confirm"].append({"at_frontier": run(hi * PAGE).get("outcome"),
                               "below": run(lo * PAGE).get("outcome")})
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", default="train_fixed,infer_varlen,train_varlen,grow")
    parser.add_argument("--configs", default="native,expandable,async")
    parser.add_argument("--out")
    parser.add_argument("--confirm", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=540)
    parser.add_argument("--worker", nargs=2, metavar=("JOB", "CONFIG"))
    args = parser.parse_args()
    if args.worker:
        result = worker(args.worker[0], args.worker[1], args.confirm,
                        time.monotonic() + args.deadline)
        print(json.dumps(result), flush=True)
        return 0
    start = time.monotonic()
    results = []
    for config in args.configs.split(","):
        for job_name in args.jobs.split(","):
            left = args.deadline - (time.monotonic() - start)
            if left < 20:
                print(f"deadline: {job_name}/{config} not measured", file=sys.stderr)
                continue
            env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=CONFIGS[config])
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--worker", job_name, config,
                 "--confirm", str(args.confirm), "--deadline", str(left - 10)],
                env=env, stdout=subprocess.PIPE, text=True, check=False)
            lines = proc.stdout.strip().splitlines()
            results.append(json.loads(lines[-1]) if lines else
                           {"job": job_name, "config": config, "error": proc.returncode})
            with open(args.out, "w") as f:
                json.dump(results, f, indent=1)
            r = results[-1]
            print(f"{job_name:14} {config:10} frontier {r.get('frontier')} "
                  f"({len(r.get('trials', []))} trials, {time.monotonic() - start:.0f} s)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
