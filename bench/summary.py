#!/usr/bin/env python3
"""The summary table of oomlab's benchmark suite: each figure against its target (issues 6 and
26), then the allocator latency tables. Reads the Google Benchmark JSON files bench/run.sh wrote,
the RMM log's side-by-side with pandas (rmm_csv_peer.json) and, where bench/first_run.sh was run
into the same folder, the first run on a fresh machine (first_run.json).

    bench/summary.py DIR        (DIR holds overhead.json, sim.json, allocator.json, ...)
    bench/summary.py DIR --markdown
    bench/summary.py DIR --gpu-overhead   (bench/gpu_overhead.sh's folder: the fill and replay
                                           figures, each hypothesis of bench/NOTES.md with its
                                           ratios and cv; also writes DIR/gpu_overhead.json)

Every Google Benchmark JSON file in DIR is read; a file named *_unpinned.json (the same
benchmarks run without taskset) has its benchmarks named <name>/unpinned.

Figures are medians where repetitions ran. Exit 0 whatever the verdicts: this reports, it does
not gate (a missed target is stated, with its figure)."""
import json
import sys
from pathlib import Path

from summary_rows import hypothesis_rows, micro_rows, replay_split_rows, seconds, si

PROGRAMS = ["overhead", "sim", "allocator", "replay", "memory", "startup"]
NOT_BENCHMARKS = ("rmm_csv_peer", "first_run", "gpu_overhead")


def load(directory):
    """{benchmark name: entry}, medians preferred, '/manual_time' and '/real_time' dropped; a
    repeated benchmark's coefficient of variation is kept beside its median as entry["cv"]."""
    results, context, spread = {}, {}, {}
    known = [Path(directory) / f"{program}.json" for program in PROGRAMS]
    others = sorted(p for p in Path(directory).glob("*.json")
                    if p not in known and p.stem not in NOT_BENCHMARKS)
    for path in known + others:
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            sys.exit(f"bench/summary.py: {path}:{e.lineno}: not JSON ({e.msg})")
        context = context or data.get("context", {})
        suffix = "/unpinned" if path.stem.endswith("_unpinned") else ""
        for b in data.get("benchmarks", []):
            name = b.get("run_name", b["name"])
            # "pair_among_live/cuda/1000/iterations:64/manual_time" -> "pair_among_live/cuda/1000"
            name = "/".join(part for part in name.split("/")
                            if part not in ("manual_time", "real_time") and not part.startswith("iterations:"))
            name += suffix
            aggregate = b.get("aggregate_name")
            if aggregate == "cv":
                spread[name] = b
            if aggregate not in (None, "median"):
                continue
            if aggregate == "median" or name not in results:
                results[name] = b
    for name, cv in spread.items():
        if name in results:
            results[name] = {**results[name], "cv": cv}
    for extra in ("rmm_csv_peer", "first_run"):
        path = Path(directory) / f"{extra}.json"
        if path.exists():
            try:
                results[extra] = json.loads(path.read_text())
            except json.JSONDecodeError as e:
                sys.exit(f"bench/summary.py: {path}:{e.lineno}: not JSON ({e.msg})")
    return results, context


class Table:
    def __init__(self, results):
        self.results = results
        self.rows = []

    def get(self, name):
        entry = self.results.get(name)
        if entry is None:
            return None, "not run"
        if entry.get("error_occurred"):
            return None, entry.get("error_message", "error")
        if "skipped" in entry:
            return None, f"skipped: {entry['skipped']}"
        return entry, None

    def add(self, figure, name, target_text, value_of, shown, met):
        entry, why = self.get(name)
        if entry is None:
            self.rows.append((figure, target_text, f"({why})", "—"))
            return
        value = value_of(entry)
        self.rows.append((figure, target_text, shown(value), "met" if met(value) else "MISSED"))


def targets(results):
    t = Table(results)
    per_event = lambda e: e["time_per_event"]
    t.add("recorder over a null backend", "recorder/null_backend", "≤ 25 ns/event", per_event,
          lambda v: si(v, "s"), lambda v: v <= 25e-9)
    t.add("scenario API + recorder, null backend", "scenario_api/null_backend", "≤ 25 ns/event",
          per_event, lambda v: si(v, "s"), lambda v: v <= 25e-9)
    fill_rows(t)
    for name, label in (("sim/pairs_among_live/1000000", "sim pairs among 1M live"),
                        ("sim/fill/1000000", "sim fill to 1M live"),
                        ("sim/scattered_free/1000000", "sim scattered free of 1M live"),
                        ("sim/large_requests/1000000", "sim 1 GiB requests among 1M live")):
        t.add(label, name, "≥ 10 M events/s", lambda e: e["items_per_second"],
              lambda v: si(v, "ev/s"), lambda v: v >= 10e6)
    curve = [results.get(f"sim/pairs_among_live/{n}") for n in (1000, 10000, 100000, 1000000)]
    if all(c is not None and "items_per_second" in c for c in curve):
        growth = curve[0]["items_per_second"] / curve[-1]["items_per_second"]
        points = " → ".join(si(1 / c["items_per_second"], "s") for c in curve)
        t.rows.append(("sim ns/event, 1k → 10k → 100k → 1M live", "O(log n): ×2 from 1k to 1M",
                       f"{points} (×{growth:.1f})", "met" if growth <= 2.0 else "MISSED"))
    t.add("100M-event run, peak resident memory", "run_memory/100000000", "< 512 MiB",
          lambda e: e["peak_rss_MiB"], lambda v: f"{v:.0f} MiB", lambda v: v < 512)
    t.add("100M-event run, memory growth per event", "run_memory/100000000", "≤ 64 B/event",
          lambda e: e["bytes_per_event"], lambda v: f"{v:.2f} B", lambda v: v <= 64)
    t.add("oomlab list", "startup/list", "< 20 ms", lambda e: seconds(e, "real_time"),
          lambda v: si(v, "s"), lambda v: v < 20e-3)
    t.add("tiny sim run, end to end", "startup/tiny_sim_run", "< 100 ms",
          lambda e: seconds(e, "real_time"), lambda v: si(v, "s"), lambda v: v < 100e-3)
    t.add("RMM CSV parse", "BM_ParseRmmCsv", "≥ 2 M rows/s", lambda e: e["items_per_second"],
          lambda v: si(v, "rows/s"), lambda v: v >= 2e6)
    t.add("PyTorch pickle parse", "BM_ParsePyTorchPickle", "≤ 50 ms",
          lambda e: seconds(e, "real_time"), lambda v: si(v, "s"), lambda v: v <= 50e-3)
    t.add("replay on sim", "BM_ReplayOnSim", "≥ 5 M events/s", lambda e: e["events_per_second"],
          lambda v: si(v, "ev/s"), lambda v: v >= 5e6)
    t.add("trace held in memory, RMM log", "BM_ParseRmmCsv", "≤ 24 B/event",
          lambda e: e["bytes_per_event"], lambda v: f"{v:.1f} B", lambda v: v <= 24)
    for arg, label in (("1", "the file in memory"), ("0", "the file on disk")):
        t.add(f"replay with events.csv / without, sim, {label}",
              f"BM_ReplayEventsCsvOverhead/to_memory:{arg}", "≤ 1.3",
              lambda e: e["ratio"], lambda v: f"{v:.3f}", lambda v: v <= 1.3)
    replay_rows(t)
    peer_rows(t)
    first_run_row(t)
    return t.rows


def fill_rows(t):
    """oomlab's fragmentation fill over the bare loop (issue 26: ≤ 1.05 with a cv under 5%)."""
    for name, label in (("async", "async"), ("async/no_events_csv", "async, no events.csv"),
                        ("async/no_events_csv/unpinned", "async, no events.csv, not pinned"),
                        ("cuda", "cuda")):
        t.add(f"fragmentation fill / bare loop, {label}", f"fill_vs_bare/{name}",
              "≤ 1.05, cv < 5%", ratio_and_cv, shown_ratio_and_cv, lambda v: steady_below(v, 1.05))


def replay_rows(t):
    for arg, label in (("0", "whole device"), ("1", "8 GiB budget")):
        t.add(f"replay / bare loop, async, {label}", f"BM_ReplayVsBareLoopOnAsync/budget_8GiB:{arg}",
              "≤ 1.10, cv < 5%", ratio_and_cv, shown_ratio_and_cv, lambda v: steady_below(v, 1.10))
    t.add("replay / bare loop, async, whole device (hypothesis i's iterations)",
          "BM_ReplayInCallSplitOnAsync", "≤ 1.10, cv < 5%", ratio_and_cv, shown_ratio_and_cv,
          lambda v: steady_below(v, 1.10))


def ratio_and_cv(entry):
    """(the median ratio, its cv over the repetitions or None)."""
    cv = entry.get("cv", {}).get("ratio")
    return entry["ratio"], cv


def shown_ratio_and_cv(value):
    ratio, cv = value
    return f"{ratio:.3f}" + ("" if cv is None else f" (cv {cv * 100:.1f}%)")


def steady_below(value, target):
    ratio, cv = value
    return ratio <= target and (cv is None or cv < 0.05)


def peer_rows(t):
    """bench/peers/rmm_csv_peer.py's figures: wall clock, with CPU time beside."""
    pandas = t.results.get("rmm_csv_peer", {})
    peer = "pandas read_csv"
    if "pandas" in pandas:
        peer += f" ({pandas['pandas']}, {'with' if pandas['pyarrow'] else 'without'} pyarrow)"
    both = lambda wall, cpu: lambda e: (e[wall], e[cpu])
    shown = lambda v: f"{v[0]:.2f} (CPU time {v[1]:.2f})"
    t.add(f"RMM log parse / {peer}, same file", "rmm_csv_peer", "≥ 1.00",
          both("parse_over_pandas", "parse_over_pandas_cpu"), shown, lambda v: v[0] >= 1.0)
    t.add("oomlab run replay of it, -a sim, process start to answer / read_csv alone",
          "rmm_csv_peer", "≤ 1.50", both("replay_over_read_csv", "replay_over_read_csv_cpu"), shown,
          lambda v: v[0] <= 1.5)


FIRST_RUN_STEPS = (("apt_git", "apt for git"), ("apt", "apt"), ("clone", "clone"),
                   ("apt_update", "apt update"), ("apt_install", "apt install"),
                   ("configure", "configure"), ("build", "build"), ("run", "run"))


def first_run_row(t):
    """bench/first_run.sh (bench/fresh_debian.sh: on a fresh Debian 12): git clone to the first
    answer, apt included where it ran, each step's time."""
    entry = t.results.get("first_run")
    if entry is None:
        t.rows.append(("first answer on a fresh machine (bench/first_run.sh)", "≤ 5 min",
                       "(not run)", "—"))
        return
    # setup_s runs from the clone to the answer (setup.sh's apt inside it); apt_git_s came before
    # the clone, and v1's apt_s was measured elsewhere.
    total = entry["clone_s"] + entry["setup_s"] + entry.get("apt_git_s", 0) + entry.get("apt_s", 0)
    steps = []
    for key, name in FIRST_RUN_STEPS:
        if f"{key}_s" in entry:
            steps.append(f"{name} {entry[f'{key}_s']:.0f} s")
        if key == "apt_install" and "apt_packages" in entry:
            steps[-1] += f" ({entry['apt_packages']} packages, {entry['apt_download_mb']:.0f} MB)"
    # What the build's CPU time takes where nothing else runs: spread over every CPU, as ninja does.
    cpu, busy = (entry["build_cpu_s"], entry["build_s"]) if "build_cpu_s" in entry else \
        (entry["setup_cpu_s"], entry["setup_s"])
    idle = total - busy + cpu / entry["cpus"]
    t.rows.append((f"first answer on a fresh {entry['cpus']}-CPU machine, ci/setup.sh run fragmentation"
                   f"{'' if entry['cuda'] else ' (no CUDA)'}",
                   "≤ 5 min", f"{total / 60:.1f} min ({'; '.join(steps)}; load {entry['load_average']}); "
                   f"{'the build' if 'build_cpu_s' in entry else 'its'} CPU time {cpu:.0f} s on idle CPUs: "
                   f"{idle / 60:.1f} min", "met" if total <= 300 else "MISSED"))


def pair_time(entry):
    """The ns_per_pair counter (nanoseconds) as a time, or why there is none."""
    if entry is None:
        return "-"
    if entry.get("error_occurred"):
        return "skipped" if "may be used here" in entry.get("error_message", "") else "error"
    return si(entry["ns_per_pair"] * 1e-9, "s")


def latency_tables(results):
    backends = ["cuda", "async", "managed", "sim"]
    by_size = [["size", *backends]]
    for size in ("256B", "4KiB", "64KiB", "2MiB", "64MiB", "1GiB"):
        row = [size]
        for b in backends:
            e = results.get(f"pair_by_size/{b}/{size}")
            row.append(pair_time(e))
        by_size.append(row)
    by_live = [["live 64 KiB blocks", *backends]]
    for live in ("1000", "10000", "100000", "1000000"):
        row = [f"{int(live):,}"]
        for b in backends:
            e = results.get(f"pair_among_live/{b}/{live}")
            row.append(pair_time(e))
        by_live.append(row)
    return by_size, by_live


def render(rows, markdown):
    if markdown:
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


# Each fill_hypothesis/<h> (bench/fill_hypotheses.cpp) and what its two variants differ in; one
# variant alone is the bare loop plus that one thing.
def gpu_overhead(directory, results, context, markdown):
    """bench/gpu_overhead.sh's table, and the same figures as DIR/gpu_overhead.json."""
    t = Table(results)
    fill_rows(t)
    replay_rows(t)
    peer_rows(t)
    hypotheses = hypothesis_rows(results)
    micro = micro_rows(results)
    print(f"host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"{context.get('date', '?')}")
    print(render([("figure", "target", "measured (median)", "verdict"), *t.rows], markdown))
    print("\nwhere the fill's time goes: variant over the bare loop in the same iteration")
    print(render([("hypothesis", "variant", "ratio (median)", "cv", "ns/block", "faults/1k"),
                  *hypotheses], markdown))
    split = replay_split_rows(results)
    if split:
        print("\nwhere the replay's time goes (i): ns an event (difference to the bare loop)")
        print(render([("loop", "total", "cv", "inside the calls", "outside them"), *split], markdown))
    if micro:
        print("\nper event on this CPU")
        print(render([("what", "median", "note"), *micro], markdown))
    record = {"schema": "oomlab.bench.gpu_overhead.v1", "context": context,
              "targets": [dict(zip(("figure", "target", "measured", "verdict"), r)) for r in t.rows],
              "hypotheses": [dict(zip(("hypothesis", "variant", "ratio", "cv", "ns_per_block",
                                       "faults_per_1k"), r)) for r in hypotheses],
              "replay_split": [dict(zip(("loop", "total_ns", "cv", "in_call_ns", "outside_ns"), r))
                               for r in split],
              "per_event": [dict(zip(("what", "median", "note"), r)) for r in micro]}
    (Path(directory) / "gpu_overhead.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    markdown = "--markdown" in sys.argv
    results, context = load(args[0])
    if not results:
        sys.exit(f"bench/summary.py: no benchmark JSON in {args[0]}")
    if "--gpu-overhead" in sys.argv:
        gpu_overhead(args[0], results, context, markdown)
        return
    print(f"host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"{context.get('date', '?')}")
    print(render([("figure", "target", "measured (median)", "verdict"), *targets(results)], markdown))
    by_size, by_live = latency_tables(results)
    print("\nallocate + free pair, by size (nothing else live)")
    print(render(by_size, markdown))
    print("\nallocate + free pair of 64 KiB among N live blocks")
    print(render(by_live, markdown))


if __name__ == "__main__":
    main()
