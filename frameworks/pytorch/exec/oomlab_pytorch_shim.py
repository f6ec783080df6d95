"""PyTorch's part of oomlab's start-up shim (oomlab_shim.py, sitecustomize.py): its memory
snapshot, with no change to the program. sitecustomize.py runs `install()` in every Python
process of the program; it then:
  - does nothing more until the program imports torch: an entry on sys.meta_path notices torch's
    import and, once it has finished, asks torch.cuda._lazy_call to start recording when the
    program first initialises CUDA (never initialising CUDA itself, so a program may still fork
    before it touches CUDA);
  - then starts PyTorch's memory history (alloc/free and segment events) and attaches PyTorch's
    out-of-memory observer, which writes the snapshot at the moment of each OOM; at exit it writes
    the whole history, unless an unhandled exception ended the process after an OOM snapshot was
    written (that one is kept);
  - writes one file per process: snapshot-rank<RANK>.pickle (or LOCAL_RANK) when set, else
    snapshot-pid<pid>.pickle, pickled as torch.cuda.memory._dump_snapshot does, through a
    temporary name and a rename, so that no half-written snapshot is ever left.
Its status events: torch-import, torch, capped, recording, unsupported, oom, exit, kept, and
framework (torch, with PYTORCH_CUDA_ALLOC_CONF as set at torch's import).

Environment (set by oomlab):
  OOMLAB_SNAPSHOT_DIR      the folder the snapshots go to (unset: no snapshot)
  OOMLAB_SNAPSHOT_STACKS   none (default: no stacks, the cheapest history) or python (the Python
                           stack of each allocation)
  OOMLAB_SNAPSHOT_ENTRIES  the most history entries PyTorch keeps (unset: PyTorch's default)
  OOMLAB_ALLOCATOR_CAP_BYTES  a cap on PyTorch's caching allocator, in bytes of each device
                           (torch.cuda.set_per_process_memory_fraction of the device's total),
                           set at the first use of CUDA: the memory above it is left to the
                           libraries beside the allocator (cuBLAS, cuDNN, NCCL). Works without a
                           snapshot folder too.

Python 3 only (sitecustomize.py runs it on Python 3).
"""
import os
import sys

from oomlab_shim import failure as _failure
from oomlab_shim import framework_seen as _framework_seen
from oomlab_shim import importlib_part as _importlib_part
from oomlab_shim import status as _status

# The variables that set PyTorch's allocator, as it documents them.
_ALLOCATOR_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


class _State(object):
    """What this process has done: the pid that started recording, the file it writes."""

    pid = None
    target = None
    oom_written = False
    torch = None


def _target_name():
    """This process's file name, chosen at its first snapshot and kept: by rank, else by pid."""
    if _State.target is None:
        rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK") or ""
        name = "snapshot-pid%d.pickle" % os.getpid()
        if rank.isdigit() and _claim("snapshot-rank%s.pickle" % rank):
            name = "snapshot-rank%s.pickle" % rank
        _State.target = name
    return _State.target


def _claim(name):
    """Whether this process is the first of the run to want `name` (two processes of one rank)."""
    status = os.environ.get("OOMLAB_SNAPSHOT_STATUS")
    if not status:
        return True
    try:
        claim = os.path.join(os.path.dirname(status), "claim-" + name)
        os.close(os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except OSError:
        return False


def _write_snapshot(moment):
    """Writes the snapshot now (`moment`: "oom" or "exit"); its name, or None on failure."""
    name = _target_name()
    folder = os.environ.get("OOMLAB_SNAPSHOT_DIR", "")
    target = os.path.join(folder, name)
    temporary = os.path.join(folder, ".%s.%d.%s.tmp" % (name, os.getpid(), _thread_id()))
    try:
        import pickle
        snapshot = _State.torch.cuda.memory._snapshot()
        with open(temporary, "wb") as out:
            pickle.dump(snapshot, out)
        os.replace(temporary, target)
    except Exception as error:
        _failure("writing %s at %s" % (name, "the OOM" if moment == "oom" else "exit"), error)
        try:
            os.remove(temporary)
        except OSError:
            pass
        return None
    return name


def _thread_id():
    try:
        import threading
        return threading.get_ident()
    except Exception:
        return 0


def _on_oom(device, alloc, device_allocated, device_free):
    """PyTorch's out-of-memory observer: called as its allocator is about to raise."""
    try:
        if os.getpid() != _State.pid:
            return
        name = _write_snapshot("oom")
        if name is not None:
            _State.oom_written = True
            _status("oom", "device %s: %s bytes asked, %s free on the device, %s allocated"
                    % (device, alloc, device_free, device_allocated), name)
    except Exception as error:
        _failure("the OOM observer", error)


def _at_exit():
    """The whole history at a normal exit; after an unhandled exception, the OOM's is kept."""
    try:
        if os.getpid() != _State.pid:
            return  # a forked child: the history is its parent's
        # Set by CPython just before it prints an unhandled exception (sys.excepthook is left
        # alone: a program may replace it).
        unhandled = getattr(sys, "last_exc", None)
        if unhandled is None:
            unhandled = getattr(sys, "last_value", None)
        if unhandled is not None and _State.oom_written:
            _status("kept", "an unhandled %s ended the process: the snapshot taken at the OOM "
                    "is kept" % type(unhandled).__name__, _State.target)
            return
        name = _write_snapshot("exit")
        if name is not None:
            _status("exit", "the whole history at exit", name)
    except Exception as error:
        _failure("the exit snapshot", error)


def _record_history(record, python_stacks, entries):
    """Starts the history with whichever signature this torch has (2.1 on; 2.0's legacy one)."""
    import inspect
    try:
        parameters = inspect.signature(record).parameters
    except (TypeError, ValueError):
        parameters = {}
    if "context" in parameters:
        kwargs = {"enabled": "all", "context": "alloc" if python_stacks else None,
                  "stacks": "python"}
        if entries is not None:
            kwargs["max_entries"] = entries
        record(**kwargs)
        return "2.1+"
    if "trace_alloc_max_entries" in parameters:
        record(True, record_context=python_stacks,
               trace_alloc_max_entries=entries if entries is not None else sys.maxsize,
               trace_alloc_record_context=python_stacks)
        return "legacy"
    raise TypeError("unknown signature of _record_memory_history: %s" % list(parameters))


def _settings():
    python_stacks = os.environ.get("OOMLAB_SNAPSHOT_STACKS", "none") == "python"
    entries = os.environ.get("OOMLAB_SNAPSHOT_ENTRIES", "")
    return python_stacks, int(entries) if entries.isdigit() else None


def _cap_allocator(torch):
    """OOMLAB_ALLOCATOR_CAP_BYTES: PyTorch's allocator capped on every device the process sees."""
    cap = os.environ.get("OOMLAB_ALLOCATOR_CAP_BYTES", "")
    if not cap.isdigit():
        return
    try:
        for device in range(torch.cuda.device_count()):
            total = torch.cuda.get_device_properties(device).total_memory
            fraction = min(1.0, float(cap) / float(total))
            torch.cuda.set_per_process_memory_fraction(fraction, device)
        _status("capped", "PyTorch's allocator capped at %s bytes a device" % cap)
    except Exception as error:
        _failure("capping PyTorch's allocator", error)


def _start_recording():
    """Run by torch.cuda when the program first initialises CUDA."""
    _cap_allocator(_State.torch)
    if not os.environ.get("OOMLAB_SNAPSHOT_DIR"):
        return
    try:
        torch = _State.torch
        memory = getattr(torch.cuda, "memory", None)
        wanted = [("torch.cuda.memory._record_memory_history",
                   getattr(memory, "_record_memory_history", None)),
                  ("torch.cuda.memory._snapshot", getattr(memory, "_snapshot", None)),
                  ("torch._C._cuda_attach_out_of_memory_observer",
                   getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer",
                           None))]
        missing = [name for name, found in wanted if found is None]
        if missing:
            _status("unsupported", "torch %s lacks %s"
                    % (getattr(torch, "__version__", "?"), ", ".join(missing)))
            return
        python_stacks, entries = _settings()
        api = _record_history(wanted[0][1], python_stacks, entries)
    except Exception as error:
        _failure("starting PyTorch's memory history", error)
        return
    _State.pid = os.getpid()
    try:
        import atexit
        atexit.register(_at_exit)
        wanted[2][1](_on_oom)
    except Exception as error:
        _failure("attaching the OOM observer", error)
    _status("recording", "api %s, stacks %s, max entries %s"
            % (api, "python" if python_stacks else "none",
               entries if entries is not None else "PyTorch's default"))


def _arm(torch):
    """torch has finished importing: recording is asked for at the first CUDA initialisation."""
    try:
        if _State.torch is not None:
            return
        _State.torch = torch
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchFinder)]
        _status("torch", getattr(torch, "__version__", "?"))
        _framework_seen("torch", torch, _ALLOCATOR_VARIABLES)
        lazy_call = getattr(getattr(torch, "cuda", None), "_lazy_call", None)
        if lazy_call is None:
            _status("unsupported", "torch %s lacks torch.cuda._lazy_call"
                    % getattr(torch, "__version__", "?"))
            return
        lazy_call(_start_recording)
    except Exception as error:
        _failure("arming at torch's import", error)


def _watch_spec_class():
    """A ModuleSpec whose `_initializing` going False (importlib sets it so once torch's module
    has run, in a `finally`) arms the recording: no frame of ours is in torch's import, so an
    error in it reads as it would without us."""
    module_spec = _importlib_part("_frozen_importlib", "ModuleSpec")

    class _TorchSpec(module_spec):
        @property
        def _initializing(self):
            return self.__dict__.get("_initializing", False)

        @_initializing.setter
        def _initializing(self, value):
            self.__dict__["_initializing"] = value
            if value:
                return
            self.__class__ = module_spec  # back to a plain spec, once and for all
            module = sys.modules.get(self.name)
            if module is not None and getattr(module, "__spec__", None) is self:
                _arm(module)

    return _TorchSpec


class _TorchFinder(object):
    """On sys.meta_path until torch is imported: finds nothing itself, but marks each spec found
    for torch to be watched (a library may look torch up well before it imports it)."""

    def __init__(self):
        self.spec_class = _watch_spec_class()
        self.finding = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.finding:
            return None
        self.finding = True
        try:
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    self.watch(spec)
                    return spec
            return None
        finally:
            self.finding = False

    def watch(self, spec):
        try:
            spec.__class__ = self.spec_class
            _status("torch-import", getattr(spec, "origin", "") or "")
        except Exception as error:
            _failure("watching torch's import", error)


def install():
    """Run by sitecustomize.py at start-up: arms now if torch is already imported (a .pth file),
    else watches for its import."""
    torch = sys.modules.get("torch")
    if torch is not None:
        _arm(torch)
    else:
        sys.meta_path.insert(0, _TorchFinder())
