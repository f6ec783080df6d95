"""A stand-in for PyTorch in oomlab's tests of the exec snapshot shim (no GPU, no real torch):
the few private APIs the shim uses, over a 'device' that is a counter of bytes. Its OutOfMemoryError
reads as PyTorch 2.x's own message, so that `oomlab exec` recognises it.

FAKE_TORCH_API picks what this torch offers: "2.x" (the default: PyTorch 2.1 and later), "legacy"
(2.0's _record_memory_history(enabled: bool, ...)), "no-history" (no _record_memory_history),
"failing" (_record_memory_history raises, as the cudaMallocAsync backend's does).
FAKE_TORCH_CAPACITY: the device's bytes (default 1 GiB).
"""
from . import _C  # noqa: F401
from . import cuda  # noqa: F401

__version__ = "2.99.0+fake"


class OutOfMemoryError(RuntimeError):
    pass
