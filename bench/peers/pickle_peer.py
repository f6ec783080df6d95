#!/usr/bin/env python3
"""oomlab's PyTorch pickle parse against CPython's C unpickler, on the same file, in one run.

    bench/peers/pickle_peer.py [--bench build/bench] [--file F.pickle | --copies 32] [--runs 9]

Without --file it makes (once, in the temp folder) a large snapshot of the sample's history
repeated --copies times (make_large_snapshot.py). CPython's figure is `pickle.load` alone, the file
already in the page cache, the median of --runs loads, with the garbage collector on (as a user
calls it) and off (the unpickler alone). oomlab's is BM_ParsePyTorchPickle of oomlab_replay_bench
(`trace::load`: read, unpickle, snapshot, trace) on the same file, the median of --runs
repetitions. Both are single-threaded; both wall and CPU time are shown, and the ratio is taken
against CPython's faster figure. The target is judged on CPU time: on a shared machine the wall
clock measures the neighbours. Exits 1 when the CPU ratio is below --target.
"""
import argparse
import gc
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SAMPLE = ROOT / "tests" / "data" / "pytorch_gpt_fp32_snapshot.pickle"


def large_snapshot(copies):
    path = Path(tempfile.gettempdir()) / f"oomlab_bench_snapshot_x{copies}.pickle"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "make_large_snapshot.py"), str(SAMPLE),
                        str(path), "--copies", str(copies)], check=True)
    return path


def cpython_ms(path, runs, collect):
    """(wall, cpu) medians of pickle.load, in ms."""
    path.read_bytes()  # into the page cache
    wall, cpu = [], []
    for _ in range(runs):
        with open(path, "rb") as f:
            if not collect:
                gc.disable()
            start, start_cpu = time.perf_counter(), time.process_time()
            value = pickle.load(f)
            cpu.append((time.process_time() - start_cpu) * 1e3)
            wall.append((time.perf_counter() - start) * 1e3)
            gc.enable()
        del value
        gc.collect()
    return statistics.median(wall), statistics.median(cpu)


def oomlab_ms(bench_dir, path, runs):
    """(wall, cpu) medians of BM_ParsePyTorchPickle on the file, in ms."""
    program = Path(bench_dir) / "oomlab_replay_bench"
    out = subprocess.run(
        [str(program), "--benchmark_filter=^BM_ParsePyTorchPickle$",
         f"--benchmark_repetitions={runs}", "--benchmark_format=json",
         "--benchmark_report_aggregates_only=true"],
        env={**os.environ, "OOMLAB_PICKLE": str(path)}, check=True, capture_output=True, text=True)
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            assert b["time_unit"] == "ms", b["time_unit"]
            return b["real_time"], b["cpu_time"]
    raise SystemExit("pickle_peer: no median in the benchmark's output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=str(ROOT / "build" / "bench"))
    ap.add_argument("--file", type=Path)
    ap.add_argument("--copies", type=int, default=32)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--target", type=float, default=2.0)
    args = ap.parse_args()
    path = args.file or large_snapshot(args.copies)
    with_gc = cpython_ms(path, args.runs, collect=True)
    without_gc = cpython_ms(path, args.runs, collect=False)
    ours = oomlab_ms(args.bench, path, args.runs)
    print(f"file: {path} ({path.stat().st_size / 1e6:.1f} MB); medians of {args.runs}, ms")
    print(f"{'':28} {'wall':>9} {'cpu':>9}")
    print(f"{'CPython pickle.load, gc on':28} {with_gc[0]:9.1f} {with_gc[1]:9.1f}")
    print(f"{'CPython pickle.load, gc off':28} {without_gc[0]:9.1f} {without_gc[1]:9.1f}")
    print(f"{'oomlab trace::load':28} {ours[0]:9.1f} {ours[1]:9.1f}")
    ratio = [min(with_gc[i], without_gc[i]) / ours[i] for i in (0, 1)]
    print(f"CPython's faster figure / oomlab's: {ratio[0]:.2f}x wall, {ratio[1]:.2f}x cpu"
          f" (target >= {args.target}x)")
    return 0 if ratio[1] >= args.target else 1

if __name__ == "__main__":
    sys.exit(main())
