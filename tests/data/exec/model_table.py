"""The model's answers on the H100, as tables (validate.sh model's output folder):

  python3 model_table.py OUT

For each job, `frontier exec` guided by the model against the blind search (--no-snapshot):
the prediction, the measured frontier, how far off, and the runs each took; then each OOM run's
record: the reproduction, the memory outside the allocator, the advice and --check-remedy.
"""
import json
import os
import sys

MIB = 1 << 20


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    out = sys.argv[1]
    print("| job | predicted | frontier (guided) | off | runs guided | frontier (blind) | runs blind |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for job in ["train_fixed", "infer_varlen", "train_varlen", "grow"]:
        guided = load(os.path.join(out, job + ".guided.json")) or {}
        blind = load(os.path.join(out, job + ".blind.json")) or {}
        predicted = guided.get("predicted_bytes")
        frontier = guided.get("frontier_bytes")
        off = "-"
        if predicted and frontier:
            off = "%+.1f MiB (%+.2f%%)" % ((predicted - frontier) / MIB,
                                          100.0 * (predicted - frontier) / frontier)
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            job, predicted, frontier, off, guided.get("runs"), blind.get("frontier_bytes"),
            blind.get("runs")))
    print()
    print("| run | outcome | reproduced | outside | advice | --check-remedy |")
    print("| --- | --- | --- | ---: | --- | --- |")
    for name in sorted(os.listdir(out)):
        summary = load(os.path.join(out, name, "summary.json")) if name.startswith("oom.") else None
        if not summary:
            continue
        model = summary.get("model") or {}
        check = model.get("remedy_check") or {}
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, summary.get("outcome"), model.get("reproduction", "no model"),
            "%.0f MiB" % (model["outside_allocator_bytes"] / MIB) if model else "-",
            model.get("advice", "-"), check.get("summary", "-")))


if __name__ == "__main__":
    main()
