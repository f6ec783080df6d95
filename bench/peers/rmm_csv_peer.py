#!/usr/bin/env python3
"""oomlab's RMM log load and replay against pandas' read_csv of the same file, side by side in one run.

    bench/peers/rmm_csv_peer.py [--bench build/bench/oomlab_replay_bench] [--oomlab build/oomlab]
                                [--rows 2000000] [--file LOG] [--repeat 5] [--json FILE]

Without --file it writes a synthetic RMM log of --rows rows (kept in the temp folder and reused
while it has that many rows): two threads, HH:MM:SS.ffffff times, up to 2,048 blocks live, sizes
log-uniform from 256 B to 1 MiB, one "allocate failure" with a (nil) pointer in 100,000.
Each round times, in turn:
  - pandas.read_csv(LOG) here (its default engine, every column: the call alone, pandas imported);
  - oomlab's trace::load of LOG in the benchmark program (BM_ParseRmmCsv with OOMLAB_RMM_CSV=LOG:
    reading, conversion, building and linking the trace);
  - `oomlab run replay --trace LOG -a sim` as a user runs it: a new process, from its start to
    its answer, events.csv and summary.json written (into a new temporary folder).
The order turns every round, so that a busy machine slows all three alike. It prints the medians
(wall clock and CPU time), the parse ratio (oomlab rows/s over pandas', target >= 1) and the
replay's time over read_csv's alone (target <= 1.5); --json writes them for bench/summary.py.
Without pandas it says so, writes a "skipped" record, and exits 0.

pandas: `python3 -m pip install pandas` (or `apt-get install python3-pandas`); with `pyarrow`
installed too, pandas 3 keeps the string columns in Arrow and reads faster."""
import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "Thread,Time,Action,Pointer,Size,Stream\n"
THREADS = (140201349764864, 140201341372160)
ROOT = Path(__file__).resolve().parents[2]
NEEDS_PANDAS = "needs pandas (python3 -m pip install pandas)"


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


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pandas_once(pandas, log):
    """(wall s, cpu s, rows) of one read_csv."""
    start, start_cpu = time.perf_counter(), time.process_time()
    frame = pandas.read_csv(log)
    cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start
    rows = len(frame)
    del frame
    return wall, cpu, rows


def parse_once(bench, log):
    """(wall s, cpu s, rows) of one trace::load of `log` in a fresh benchmark process."""
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
    per = 1e3 * run["iterations"]
    return run["real_time"] / per, run["cpu_time"] / per, int(run["rows"])


def replay_once(oomlab, log, parent):
    """(wall s, cpu s) of `oomlab run replay --trace LOG -a sim`, process start to exit, into a new
    folder as a user's first run (removed afterwards, outside the time)."""
    folder = tempfile.mkdtemp(dir=parent)
    command = [oomlab, "run", "replay", "--trace", str(log), "-a", "sim", "--out", folder, "--force"]
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"rmm_csv_peer: {' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    shutil.rmtree(folder)
    return wall, children_cpu() - cpu


def median(samples, i):
    return statistics.median(s[i] for s in samples)


def measure(args, pandas, log):
    samples = {"read_csv": [], "parse": [], "replay": []}
    folder = tempfile.mkdtemp(prefix="oomlab_peer_run_")
    steps = [("read_csv", lambda: pandas_once(pandas, log)),
             ("parse", lambda: parse_once(str(args.bench), log)),
             ("replay", lambda: replay_once(str(args.oomlab), log, folder))]
    try:
        for round_number in range(args.repeat):
            turn = round_number % len(steps)
            for name, step in steps[turn:] + steps[:turn]:
                samples[name].append(step())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = samples["read_csv"][0][2]
    if samples["parse"][0][2] != rows:
        print(f"rmm_csv_peer: pandas read {rows:,} rows, oomlab {samples['parse'][0][2]:,}",
              file=sys.stderr)
    figures = {name: {"wall_s": [s[0] for s in got], "cpu_s": [s[1] for s in got],
                      "median_wall_s": median(got, 0), "median_cpu_s": median(got, 1)}
               for name, got in samples.items()}
    read, parse, replay = figures["read_csv"], figures["parse"], figures["replay"]
    return {
        "rows": rows, "figures": figures,
        "parse_over_pandas": read["median_wall_s"] / parse["median_wall_s"],
        "parse_over_pandas_cpu": read["median_cpu_s"] / parse["median_cpu_s"],
        "replay_over_read_csv": replay["median_wall_s"] / read["median_wall_s"],
        "replay_over_read_csv_cpu": replay["median_cpu_s"] / read["median_cpu_s"],
    }


def report(record):
    f = record["figures"]
    print(f"file: {record['file']} ({record['rows']:,} rows, {record['file_MiB']:.0f} MiB); "
          f"medians of {record['repeat']}; load average {record['load_average']}")
    print(f"pandas {record['pandas']} read_csv ({'with' if record['pyarrow'] else 'without'} "
          "pyarrow), default engine")
    for name, label in (("read_csv", "pandas read_csv"), ("parse", "oomlab trace::load"),
                        ("replay", "oomlab run replay -a sim (whole process)")):
        wall, cpu = f[name]["median_wall_s"], f[name]["median_cpu_s"]
        print(f"  {label:42} {wall * 1e3:8.0f} ms wall {cpu * 1e3:8.0f} ms CPU   "
              f"{record['rows'] / wall / 1e6:6.2f} M rows/s")
    print(f"parse: oomlab rows/s over pandas': {record['parse_over_pandas']:.2f} "
          f"(CPU time: {record['parse_over_pandas_cpu']:.2f}; target >= 1)")
    print(f"replay, process start to answer, over read_csv alone: "
          f"{record['replay_over_read_csv']:.2f} (CPU time: {record['replay_over_read_csv_cpu']:.2f};"
          " target <= 1.5)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, default=ROOT / "build/bench/oomlab_replay_bench")
    parser.add_argument("--oomlab", type=Path, default=ROOT / "build/oomlab")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--file", type=Path, help="an RMM log to read instead of a synthetic one")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here (bench/summary.py)")
    args = parser.parse_args()
    try:
        import pandas
    except ImportError:
        print(f"rmm_csv_peer: skipped: {NEEDS_PANDAS}", file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps({"skipped": NEEDS_PANDAS}) + "\n")
        return
    for program in (args.bench, args.oomlab):
        if not program.is_file():
            sys.exit(f"rmm_csv_peer: {program} not found (build oomlab and oomlab_replay_bench)")
    log = args.file or synthetic_log(args.rows)
    record = {"schema": "oomlab.peer.rmm_csv.v1", "file": str(log),
              "file_MiB": os.path.getsize(log) / 2**20, "repeat": args.repeat,
              "pandas": pandas.__version__, "pyarrow": importlib.util.find_spec("pyarrow") is not None,
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    record.update(measure(args, pandas, log))
    report(record)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
