"""Runs a Python program with PyTorch's memory history recorded from its first allocation, and
writes the snapshot when it ends (torch.cuda.memory._dump_snapshot), as a user would:

  python3 snapshot_run.py OUT.pickle [--stacks python|all] PROGRAM.py ARGS...

The history keeps every entry (max_entries 1,000,000) with the frames asked for (Python frames by
default: C++ frames make the file ten times larger and the run slower).
"""
import runpy
import sys

import torch


def main():
    out = sys.argv[1]
    args = sys.argv[2:]
    stacks = "python"
    if args[:1] == ["--stacks"]:
        stacks, args = args[1], args[2:]
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks=stacks)
    sys.argv = args
    try:
        runpy.run_path(args[0], run_name="__main__")
    finally:
        torch.cuda.synchronize()
        torch.cuda.memory._dump_snapshot(out)
        torch.cuda.memory._record_memory_history(enabled=None)


if __name__ == "__main__":
    main()
