"""The stand-in for torch.cuda: lazy initialisation with its queued calls, and a device of
FAKE_TORCH_CAPACITY bytes whose allocations the memory history records."""
import os

from . import memory  # noqa: F401

_initialized = False
_queued_calls = []
_capacity = int(os.environ.get("FAKE_TORCH_CAPACITY", str(1 << 30)))
_live = {}
_next_address = [1 << 20]


def is_initialized():
    return _initialized


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append(callable)


def init():
    """What a program's first CUDA call does: the queued calls run then."""
    global _initialized
    if _initialized:
        return
    _initialized = True
    for queued in _queued_calls:
        queued()


def _size(size):
    """As PyTorch's message writes a size."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return "%.2f %s" % (size / float(scale), unit)
    return "%d bytes" % size


def allocate(size):
    """A block of `size` bytes, or PyTorch's OutOfMemoryError after its observers ran."""
    import torch
    init()
    used = sum(_live.values())
    if used + size > _capacity:
        free = _capacity - used
        memory._trace("oom", 0, size, device_free=free)
        for observer in list(torch._C._observers):
            observer(0, size, used, free)
        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of which "
            "%s is free. Including non-PyTorch memory, this process has %s memory in use. Of the "
            "allocated memory %s is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
            "unallocated." % (_size(size), _size(_capacity), _size(free), _size(used), _size(used)))
    address = _next_address[0]
    _next_address[0] += size
    _live[address] = size
    memory._trace("alloc", address, size)
    return address


def free(address):
    size = _live.pop(address)
    memory._trace("free_completed", address, size)
