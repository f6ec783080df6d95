"""The stand-in for torch.cuda.memory: _record_memory_history in the signature FAKE_TORCH_API
names, and _snapshot, a dict shaped as PyTorch's (segments, device_traces, one per device)."""
import os
import sys

_settings = None
_history = []


def _trace(action, address, size, **extra):
    if _settings is not None and _settings.get("enabled") == "all":
        entry = {"action": action, "addr": address, "size": size, "stream": 0, "frames": []}
        entry.update(extra)
        _history.append(entry)


def _recording():
    """What the history was started with (None: not recording)."""
    return _settings


def _snapshot(device=None):
    from . import _live
    # FAKE_TORCH_DEVICE=N: this process's CUDA is device N (a rank's cuda:N), as PyTorch keeps
    # one history per device and marks each segment with its device.
    own = int(os.environ.get("FAKE_TORCH_DEVICE", "0"))
    segments = [{"address": a, "total_size": s, "stream": 0, "segment_type": "large", "device": own,
                 "allocated_size": s, "active_size": s,
                 "blocks": [{"address": a, "size": s, "requested_size": s,
                             "state": "active_allocated", "frames": []}]}
                for a, s in sorted(_live.items())]
    return {"segments": segments, "device_traces": [[] for _ in range(own)] + [list(_history)],
            "recorded_with": dict(_settings or {}), "pid": os.getpid()}


_api = os.environ.get("FAKE_TORCH_API", "2.x")

if _api in ("2.x", "no-observer"):
    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                               device=None, clear_history=False):
        global _settings
        _settings = {"enabled": enabled, "context": context, "stacks": stacks,
                     "max_entries": max_entries}
elif _api == "legacy":
    def _record_memory_history(enabled, record_context=True, trace_alloc_max_entries=1,
                               trace_alloc_record_context=False, device=None,
                               record_context_cpp=False):
        global _settings
        _settings = {"enabled": "all" if enabled else None, "record_context": record_context,
                     "max_entries": trace_alloc_max_entries,
                     "trace_alloc_record_context": trace_alloc_record_context}
elif _api == "failing":
    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                               device=None):
        raise RuntimeError("cudaMallocAsync does not yet support recordHistory")
