"""The rows bench/summary.py builds from one benchmark's figures: units, the fill hypotheses, the
replay's parts and the micro-benchmarks (a module of its own so that each file stays short)."""
import math


def seconds(entry, field):
    """A time field in seconds (real_time/cpu_time carry time_unit)."""
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return entry[field] * scale


def si(value, unit):
    if value is None or math.isnan(value):
        return "-"
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value * 1e12:.3g} p{unit}"


HYPOTHESES = {
    "a_chunks_first_touch": ("(a) first use of the event log's chunks", "recorded", "recorded_warm_log"),
    "b_clock": ("(b) the recorder's clock read", "clock_read", None),
    "c_virtual_call": ("(c) a virtual call a block", "backend_virtual", "backend_direct"),
    "d_events_csv": ("(d) the events.csv writer thread", "recorded_csv", "recorded"),
    "e_live_table": ("(e) the live-block table, new vs grown", "live_table", "live_table_warm"),
    "e_block_list": ("(e) the scenario's list, grown vs reserved", "block_list_grown", "block_list_reserved"),
    "layers": ("layers: backend, + recorder, + harness context", None, None),
    "g_in_call": ("(g) inside the allocation call vs outside it", "harness_timed", "bare_timed"),
    "h_cache_traffic": ("(h) the driver call after the harness's memory traffic",
                        "bare_timed_traffic", "bare_timed"),
}


def split_rows(entry, first, second):
    """g_in_call: the gap between two timed variants split into the time inside the allocation
    call (the driver's, when the harness runs around it) and outside it (the harness's own)."""
    rows = []
    cv = entry.get("cv", {})
    for part, label in (("in_call", "inside the call"), ("outside", "outside the call")):
        a, b = entry.get(f"{first}_{part}_ns"), entry.get(f"{second}_{part}_ns")
        if a is None or b is None:
            continue
        spread = [cv.get(f"{v}_{part}_ns") for v in (first, second)]
        spread_text = "/".join("-" if c is None else f"{c * 100:.1f}%" for c in spread)
        share = (a - b) / entry["bare_ns_per_block"] * 100
        rows.append(("", f"{label}: {a:.0f} vs {b:.0f} ns", f"{share:+.1f}% of bare", spread_text,
                     f"{a - b:+.0f}", ""))
    return rows


def hypothesis_rows(results):
    """One row a variant: its fill over the bare loop's (median, cv over repetitions), ns a block
    over the bare loop, page faults a 1,000 blocks; then the difference the hypothesis is about."""
    rows = []
    for h, (question, first, second) in HYPOTHESES.items():
        entry = results.get(f"fill_hypothesis/{h}")
        if entry is None or entry.get("error_occurred") or "skipped" in entry:
            why = "not run" if entry is None else entry.get("error_message", "skipped")
            rows.append((question, "—", f"({why})", "", "", ""))
            continue
        cv = entry.get("cv", {})
        variants = [k[:-len("_ratio")] for k in entry if k.endswith("_ratio")]
        for v in variants:
            spread = cv.get(f"{v}_ratio")
            rows.append((question, v, f"{entry[f'{v}_ratio']:.3f}",
                         "-" if spread is None else f"{spread * 100:.1f}%",
                         f"{entry[f'{v}_ns']:+.0f}", f"{entry[f'{v}_faults']:.1f}"))
            question = ""
        if first and second and f"{first}_ns" in entry and f"{second}_ns" in entry:
            diff = entry[f"{first}_ns"] - entry[f"{second}_ns"]
            share = diff / entry["bare_ns_per_block"] * 100
            rows.append(("", f"{first} − {second}", f"{share:+.1f}% of bare", "", f"{diff:+.0f}", ""))
            rows += split_rows(entry, first, second)
        rows.append(("", "bare loop", f"{entry['bare_ns_per_block']:.0f} ns/block", "", "",
                     f"{entry['bare_faults']:.1f}"))
    return rows


def replay_split_rows(results):
    """Hypothesis (i): the replay's time an event inside the driver calls and outside them, for
    the bare loop, the bare loop writing an event's bytes after each call, and the recorded
    backend; the whole run's total; each with its difference to the bare loop."""
    entry = results.get("BM_ReplayInCallSplitOnAsync")
    if entry is None or entry.get("error_occurred"):
        return []
    cv = entry.get("cv", {})

    def spread(name):
        c = cv.get(name)
        return "-" if c is None else f"{c * 100:.1f}%"

    rows = []
    for v in ("bare", "bare_traffic", "recorded"):
        cells = []
        for part in ("in_call", "outside"):
            value, bare = entry.get(f"{v}_{part}_ns"), entry.get(f"bare_{part}_ns")
            if value is None:
                cells.append("-")
                continue
            delta = "" if v == "bare" else f" ({value - bare:+.0f})"
            cells.append(f"{value:.0f}{delta}")
        total = entry.get(f"{v}_ns", 0)
        rows.append((v, f"{total:.0f} ({total - entry.get('bare_ns', 0):+.0f})", spread(f"{v}_ns"),
                     *cells))
    run = entry.get("run_ns")
    if run is not None:
        rows.append(("whole run", f"{run:.0f} ({run - entry.get('bare_ns', 0):+.0f})",
                     spread("run_ns"), "", ""))
        rows.append(("run / bare (median of the iterations)", f"{entry['ratio']:.3f}", spread("ratio"),
                     "", ""))
    return rows


def micro_rows(results):
    rows = []
    for name, label in (("clock/event_clock", "an event's timestamp (EventClock)"),
                        ("clock/steady_clock", "steady_clock::now()")):
        entry = results.get(name)
        if entry is not None and "real_time" in entry:
            rows.append((label, si(seconds(entry, "real_time"), "s"), entry.get("label", "")))
    for arg, label in (("1", "first touch of a 4 KiB page"), ("0", "a page touched before")):
        entry = results.get(f"first_touch/fresh:{arg}")
        if entry is not None and "ns_per_page" in entry:
            rows.append((label, si(entry["ns_per_page"] * 1e-9, "s"), ""))
    return rows
