"""The stand-in for torch._C: the out-of-memory observers PyTorch's allocator calls."""
import os

_observers = []


def _attach(observer):
    _observers.append(observer)


if os.environ.get("FAKE_TORCH_API", "2.x") != "no-observer":
    _cuda_attach_out_of_memory_observer = _attach
