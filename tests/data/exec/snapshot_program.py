"""A Python program for oomlab's tests of the exec snapshot shim, run with the stand-in torch
(tests/data/exec/fake_torch) on PYTHONPATH:

  python3 snapshot_program.py MODE

  complete   says whether torch is imported at start, looks it up (as libraries do before they
             import it), says whether the history is recorded before and after CUDA's first
             use, allocates and frees, exits 0
  oom        allocates past the device's capacity: PyTorch's OutOfMemoryError, unhandled (exit 1;
             a block is freed as it unwinds, after the OOM)
  survive    an OOM caught, then more work, exits 0
  oom-other  an OOM caught, more work, then another exception, unhandled (exit 1)
  fork       CUDA used, then a child forked that exits through Python's normal exit; exits 0
  path       prints sys.path and whether `sitecustomize` has a marker (CHAINED), exits 0
  no-torch   never imports torch: prints a line and exits 3
  shim       prints the folder of oomlab's shim and the shim's source, as the program sees them
"""
import os
import sys


def complete():
    print("torch at start: %s" % ("torch" in sys.modules))
    import importlib.util
    print("torch found: %s" % (importlib.util.find_spec("torch") is not None))  # as libraries do
    import torch
    print("queued at import: %d" % len(torch.cuda._queued_calls))
    print("recording before CUDA: %s" % torch.cuda.memory._recording())
    block = torch.cuda.allocate(1 << 20)
    recording = torch.cuda.memory._recording()
    print("recording after CUDA: %s" % (sorted(recording.items()) if recording else None))
    torch.cuda.free(block)


def oom():
    import torch
    kept = torch.cuda.allocate(768 << 20)
    try:
        torch.cuda.allocate(512 << 20)
    finally:
        torch.cuda.free(kept)


def survive():
    import torch
    kept = torch.cuda.allocate(768 << 20)
    try:
        torch.cuda.allocate(512 << 20)
    except torch.OutOfMemoryError:
        print("survived an OOM")
    torch.cuda.free(torch.cuda.allocate(128 << 20))
    torch.cuda.free(kept)


def oom_other():
    import torch
    try:
        torch.cuda.allocate(2 << 30)
    except torch.OutOfMemoryError:
        torch.cuda.free(torch.cuda.allocate(1 << 20))
        raise ValueError("the program's own error after an OOM")


def fork():
    import torch
    torch.cuda.free(torch.cuda.allocate(1 << 20))
    child = os.fork()
    if child == 0:
        sys.exit(0)  # Python's normal exit: its atexit handlers run
    os.waitpid(child, 0)
    print("child done")


def path():
    print("\n".join(sys.path))
    import sitecustomize
    print("chained: %s" % getattr(sitecustomize, "CHAINED", None))


def no_torch():
    print("no torch here")
    sys.exit(3)


def shim():
    """The shim's folder, then each file oomlab wrote there for it, after a line naming it."""
    folder = os.path.dirname(os.environ["OOMLAB_SNAPSHOT_STATUS"])
    print(folder)
    modules = [m for m in os.environ["OOMLAB_SHIM_MODULES"].split(",") if m]
    for name in ["sitecustomize", "oomlab_shim"] + modules:
        print("== %s.py" % name)
        with open(os.path.join(folder, name + ".py")) as source:
            sys.stdout.write(source.read())


MODES = {"complete": complete, "oom": oom, "survive": survive, "oom-other": oom_other,
         "fork": fork, "path": path, "no-torch": no_torch, "shim": shim}

if __name__ == "__main__":
    MODES[sys.argv[1]]()
