#!/usr/bin/env python3
"""A large PyTorch memory snapshot made from a real one: its history repeated COPIES times.

Copy k's addresses are shifted by k * 16 TiB and its times by k history spans, and its segments
(the state at the end) are repeated with the same shift, so every copy's blocks still live at the
end are in the copy's own segments: the result is a valid snapshot that oomlab replays. Written
with pickle protocol 4, as torch.cuda.memory._dump_snapshot() writes it.

    make_large_snapshot.py SOURCE.pickle OUT.pickle [--copies 32]
"""
import argparse
import copy
import pickle

SHIFT = 1 << 44  # 16 TiB: past the span of any one GPU's addresses


def shifted_entry(entry, k, time_shift):
    e = dict(entry)
    if "addr" in e:
        e["addr"] += k * SHIFT
    if "time_us" in e:
        e["time_us"] += k * time_shift
    return e


def shifted_segment(segment, k):
    s = copy.deepcopy(segment)
    s["address"] += k * SHIFT
    for block in s.get("blocks", []):
        if "address" in block:
            block["address"] += k * SHIFT
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, default=32)
    args = ap.parse_args()
    with open(args.source, "rb") as f:
        snapshot = pickle.load(f)
    history = snapshot["device_traces"][0]
    times = [e["time_us"] for e in history if "time_us" in e]
    time_shift = max(times) - min(times) + 1000 if times else 0
    snapshot["device_traces"][0] = [
        shifted_entry(e, k, time_shift) for k in range(args.copies) for e in history
    ]
    snapshot["segments"] = [
        shifted_segment(s, k) for k in range(args.copies) for s in snapshot["segments"]
    ]
    with open(args.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)


if __name__ == "__main__":
    main()
