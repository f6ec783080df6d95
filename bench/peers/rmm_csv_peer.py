#!/usr/bin/env python3
"""oomlab's RMM log load against pandas' read_csv of the same file, side by side in one run.

    bench/peers/rmm_csv_peer.py [--bench build/bench/oomlab_replay_bench] [--rows 6000000]
                                [--file LOG] [--repeat 5]

Without --file it writes a synthetic RMM log of --rows rows (kept in the temp folder and reused
while it has that many rows): two threads, HH:MM:SS.ffffff times, up to 2,048 blocks live, sizes
log-uniform from 256 B to 1 MiB, one "allocate failure" with a (nil) pointer in 100,000.
Each round times one pandas.read_csv(LOG) (default engine, every column) here and one
trace::load of LOG in the benchmark program (BM_ParseRmmCsv with OOMLAB_RMM_CSV=LOG: reading,
conversion, building and linking the trace); the rounds alternate so that a busy machine slows
both alike. It prints each median in rows/s and their ratio (oomlab / pandas).

pandas: `python3 -m pip install pandas` (or `apt-get install python3-pandas`); with `pyarrow`
installed too, pandas 3 keeps the string columns in Arrow and reads faster: the peer to beat."""
import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "Thread,Time,Action,Pointer,Size,Stream\n"
THREADS = (140201349764864, 140201341372160)


def write_log(path, rows):
    rng = random.Random(7)
    live, next_address, us = [], 0x7F4C2A000000, 12 * 3_600_000_000
    with path.open("w") as out:
        out.write(HEADER)
        for _ in range(rows):
            us += rng.randint(1, 3)
            h, m = us // 3_600_000_000 % 24, us // 60_000_000 % 60
            time_of_day = f"{h:02}:{m:02}:{us // 1_000_000 % 60:02}.{us % 1_000_000:06}"
            thread = THREADS[rng.random() < 0.25]
            if live and (len(live) >= 2048 or rng.random() < 0.5):
                k = rng.randrange(len(live))
                address, size = live[k]
                live[k] = live[-1]
                live.pop()
                out.write(f"{thread},{time_of_day},free,{address:#x},{size},0x0\n")
            elif rng.random() < 1e-5:
                out.write(f"{thread},{time_of_day},allocate failure,(nil),{1 << 40},0x0\n")
            else:
                size = int(2 ** (8 + rng.random() * 12))
                out.write(f"{thread},{time_of_day},allocate,{next_address:#x},{size},0x0\n")
                live.append((next_address, size))
                next_address += 1 << 20


def synthetic_log(rows):
    path = Path(tempfile.gettempdir()) / f"oomlab_peer_rmm_{rows}.csv"
    if not path.exists() or sum(1 for _ in path.open("rb")) != rows + 1:
        print(f"writing {path} ({rows:,} rows)...", file=sys.stderr)
        path.unlink(missing_ok=True)
        write_log(path, rows)
    return path


def oomlab_once(bench, log):
    """(seconds, rows) of one trace::load of `log` in a fresh benchmark process."""
    result = subprocess.run(
        [bench, "--benchmark_filter=^BM_ParseRmmCsv$", "--benchmark_min_time=0.001",
         "--benchmark_format=json"],
        env={**os.environ, "OOMLAB_RMM_CSV": str(log)}, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"rmm_csv_peer: {bench} failed:\n{result.stderr}")
    run = json.loads(result.stdout)["benchmarks"][0]
    if "error_message" in run:
        sys.exit(f"rmm_csv_peer: {run['error_message']}")
    assert run["time_unit"] == "ms"
    return run["real_time"] / 1e3 / run["iterations"], int(run["rows"])


def main():
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default=root / "build/bench/oomlab_replay_bench")
    parser.add_argument("--rows", type=int, default=6_000_000)
    parser.add_argument("--file", type=Path, help="an RMM log to read instead of a synthetic one")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        import pandas
    except ImportError:
        sys.exit("rmm_csv_peer: needs pandas: python3 -m pip install pandas")
    if not Path(args.bench).is_file():
        sys.exit(f"rmm_csv_peer: {args.bench} not found (build oomlab_replay_bench, -DOOMLAB_BENCH=ON)")
    log = args.file or synthetic_log(args.rows)
    pandas_s, oomlab_s = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        frame = pandas.read_csv(log)
        pandas_s.append(time.perf_counter() - start)
        pandas_rows = len(frame)
        del frame
        seconds, oomlab_rows = oomlab_once(args.bench, log)
        oomlab_s.append(seconds)
    if pandas_rows != oomlab_rows:
        print(f"rmm_csv_peer: pandas read {pandas_rows:,} rows, oomlab {oomlab_rows:,}", file=sys.stderr)
    pandas_rate = pandas_rows / statistics.median(pandas_s)
    oomlab_rate = oomlab_rows / statistics.median(oomlab_s)
    print(f"file: {log} ({pandas_rows:,} rows, {os.path.getsize(log) / 2**20:.0f} MiB)")
    arrow = "with" if importlib.util.find_spec("pyarrow") else "without"
    print(f"pandas {pandas.__version__} read_csv ({arrow} pyarrow): {pandas_rate / 1e6:.2f} M rows/s "
          f"(median of {args.repeat}: {statistics.median(pandas_s) * 1e3:.0f} ms)")
    print(f"oomlab trace::load:       {oomlab_rate / 1e6:.2f} M rows/s "
          f"(median of {args.repeat}: {statistics.median(oomlab_s) * 1e3:.0f} ms)")
    print(f"ratio oomlab / pandas: {oomlab_rate / pandas_rate:.2f}")


if __name__ == "__main__":
    main()
