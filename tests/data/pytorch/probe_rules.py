"""Small experiments that pin down what PyTorch's allocators do on this GPU, each in a fresh
process (PYTORCH_CUDA_ALLOC_CONF is read once): the segment calls that expandable segments make,
how a per-process memory fraction is checked, and how the cudaMallocAsync backend's pool grows
and whether it gives freed memory back when the device is full. Prints one JSON line each.

  python3 probe_rules.py            all experiments
  python3 probe_rules.py NAME       one, in this process (used by the above)
"""
import json
import os
import subprocess
import sys

MIB = 1 << 20


def trace_of(torch):
    entries = torch.cuda.memory._snapshot()["device_traces"][0]
    keep = ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom")
    return [(e["action"], e["size"]) for e in entries if e["action"] in keep]


def alloc(torch, n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def expandable_sizes(torch):
    """Which mapping each request size makes with expandable segments."""
    torch.cuda.memory._record_memory_history(enabled="all", context=None)
    held = [alloc(torch, s) for s in (4096, 3 * MIB, 12 * MIB, 25 * MIB, 100 * MIB)]
    del held[2]
    held.append(alloc(torch, 11 * MIB))
    held.append(alloc(torch, 1536 * 1024))
    del held
    torch.cuda.empty_cache()
    return {"trace": trace_of(torch)}


def fraction_fill(torch, request):
    """How many requests of `request` bytes fit under a fraction cap 64 MiB over what is held."""
    alloc(torch, 1)  # context and pools
    torch.cuda.empty_cache()
    total = torch.cuda.mem_get_info()[1]
    allowed = torch.cuda.memory_reserved() + 64 * MIB
    torch.cuda.set_per_process_memory_fraction(allowed / total)
    torch.cuda.memory._record_memory_history(enabled="all", context=None)
    held = []
    try:
        while len(held) < 1000:
            held.append(alloc(torch, request))
    except torch.OutOfMemoryError as e:
        message = str(e).splitlines()[0]
    return {"allowed": int(allowed / total * total), "fitted": len(held), "message": message,
            "reserved": torch.cuda.memory_reserved(), "trace": trace_of(torch)[-6:],
            "settings": torch.cuda.memory._snapshot()["allocator_settings"]}


def async_growth(torch):
    """ReservedMemCurrent of the cudaMallocAsync backend's pool after one request of each size."""
    out = {}
    for size in (256, MIB, 3 * MIB, 20 * MIB, 31 * MIB, 32 * MIB, 33 * MIB, 63 * MIB, 65 * MIB,
                 100 * MIB, 200 * MIB):
        x = alloc(torch, size)
        out[str(size)] = torch.cuda.memory_reserved()
        del x
        torch.cuda.empty_cache()
    pair = [alloc(torch, 20 * MIB), alloc(torch, 20 * MIB)]
    out["two_20MiB"] = torch.cuda.memory_reserved()
    del pair
    torch.cuda.empty_cache()
    small = [alloc(torch, MIB) for _ in range(64)]
    out["64x1MiB"] = torch.cuda.memory_reserved()
    del small[::2]
    big = alloc(torch, 20 * MIB)
    out["then_20MiB_after_freeing_half"] = torch.cuda.memory_reserved()
    del big, small
    torch.cuda.empty_cache()
    out["after_trim"] = torch.cuda.memory_reserved()
    return out


def async_full_device(torch, block):
    """With a ballast leaving 512 MiB: fill the pool with `block`-byte requests, free every other
    one, then ask for 256 MiB. Does the pool give its freed chunks back to serve it?"""
    import cupy

    alloc(torch, 1)
    torch.cuda.empty_cache()
    free = torch.cuda.mem_get_info()[0]
    ballast = cupy.cuda.runtime.malloc((free - 512 * MIB) // (2 * MIB) * 2 * MIB)
    held = []
    try:
        while True:
            held.append(alloc(torch, block))
    except torch.OutOfMemoryError:
        pass
    filled = len(held)
    reserved_full = torch.cuda.memory_reserved()
    del held[::2]
    result = {"block": block, "filled": filled, "reserved_full": reserved_full}
    for ask in (64 * MIB, 256 * MIB):
        try:
            x = alloc(torch, ask)
            result[f"ask_{ask // MIB}MiB"] = "ok"
            del x
        except torch.OutOfMemoryError as e:
            result[f"ask_{ask // MIB}MiB"] = str(e).splitlines()[0][:200]
    result["reserved_after"] = torch.cuda.memory_reserved()
    del held
    torch.cuda.empty_cache()
    cupy.cuda.runtime.free(ballast)
    return result


EXPERIMENTS = {
    "expandable_sizes": ("expandable_segments:True", expandable_sizes),
    "fraction_native_2MiB": ("", lambda t: fraction_fill(t, 2 * MIB)),
    "fraction_expandable_2MiB": ("expandable_segments:True", lambda t: fraction_fill(t, 2 * MIB)),
    "fraction_expandable_30MiB": ("expandable_segments:True",
                                  lambda t: fraction_fill(t, 30 * MIB)),
    "async_growth": ("backend:cudaMallocAsync", async_growth),
    "async_full_1MiB": ("backend:cudaMallocAsync", lambda t: async_full_device(t, MIB)),
    "async_full_32MiB": ("backend:cudaMallocAsync", lambda t: async_full_device(t, 32 * MIB)),
    "native_full_1MiB": ("", lambda t: async_full_device(t, MIB)),
}


def main():
    if len(sys.argv) > 1:
        import torch

        name = sys.argv[1]
        try:
            result = EXPERIMENTS[name][1](torch)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            result = {"error": repr(e)[:400]}
        print(json.dumps({"experiment": name, **result}), flush=True)
        return 0
    for name, (conf, _) in EXPERIMENTS.items():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        subprocess.run([sys.executable, os.path.abspath(__file__), name], env=env, check=False,
                       timeout=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
